package api

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"verdict/internal/domain"
	"verdict/internal/store"
	"verdict/internal/testcases"
)

// testCaseFields are the fields of a test case a body may set.
type testCaseFields struct {
	Title         *string            `json:"title"`
	Suite         *string            `json:"suite"`
	Tags          *[]string          `json:"tags"`
	Priority      *string            `json:"priority"`
	Preconditions *string            `json:"preconditions"`
	Steps         *[]domain.TestStep `json:"steps"`
}

func (f testCaseFields) input() testcases.Input {
	return testcases.Input{Title: f.Title, Suite: f.Suite, Tags: f.Tags, Priority: f.Priority,
		Preconditions: f.Preconditions, Steps: f.Steps}
}

func (s *Server) createTestCase(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ProjectID string `json:"projectId"`
		testCaseFields
	}
	if err := decode(w, r, &body); err != nil {
		writeDomainError(w, err)
		return
	}
	in := body.input()
	in.ProjectID = body.ProjectID
	c, err := s.testCases.Create(r.Context(), principalFrom(r), in)
	if err != nil {
		s.fail(w, r, err, "Failed to create test case")
		return
	}
	created(w, obj{"testCase": testCaseView(c)})
}

// listTestCases: GET /api/test-cases?projectId=&suite=&tag=&limit=&offset=.
func (s *Server) listTestCases(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := store.TestCaseFilter{ProjectID: q.Get("projectId"), Suite: q.Get("suite"), Tag: q.Get("tag")}
	qp := &query{v: q}
	f.Limit = qp.int("limit", testcases.DefaultListLimit, 1, testcases.MaxListLimit)
	f.Offset = qp.int("offset", 0, 0, 1<<30)
	if qp.bad != nil {
		writeDomainError(w, qp.bad)
		return
	}
	list, total, err := s.testCases.List(r.Context(), principalFrom(r), f)
	if err != nil {
		s.fail(w, r, err, "Failed to list test cases")
		return
	}
	out := make([]TestCase, len(list))
	for i := range list {
		out[i] = testCaseView(&list[i])
	}
	ok(w, obj{"data": obj{"testCases": out, "total": total}})
}

func (s *Server) getTestCase(w http.ResponseWriter, r *http.Request) {
	c, err := s.testCases.Get(r.Context(), principalFrom(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err, "Failed to fetch test case")
		return
	}
	ok(w, obj{"testCase": testCaseView(c)})
}

func (s *Server) patchTestCase(w http.ResponseWriter, r *http.Request) {
	var body testCaseFields
	if err := decode(w, r, &body); err != nil {
		writeDomainError(w, err)
		return
	}
	c, err := s.testCases.Update(r.Context(), principalFrom(r), r.PathValue("id"), body.input())
	if err != nil {
		s.fail(w, r, err, "Failed to update test case")
		return
	}
	ok(w, obj{"testCase": testCaseView(c)})
}

func (s *Server) deleteTestCase(w http.ResponseWriter, r *http.Request) {
	if err := s.testCases.Delete(r.Context(), principalFrom(r), r.PathValue("id")); err != nil {
		s.fail(w, r, err, "Failed to delete test case")
		return
	}
	ok(w, obj{"message": "Test case deleted"})
}

// ImportResult is the answer of a CSV import.
type ImportResult struct {
	Imported int          `json:"imported"`
	Updated  int          `json:"updated"`
	Skipped  []SkippedRow `json:"skipped"`
}

// SkippedRow is a record of the file left out, by the line where it starts.
type SkippedRow struct {
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

var (
	errImportTooLarge = domain.BadRequest("Request body too large",
		fmt.Sprintf("The file must be at most %d bytes", testcases.MaxImportBytes))
	errImportType = domain.BadRequest("Invalid content type", "Send the file as text/csv")
)

// importTestCases: POST /api/test-cases/import?projectId= with a CSV file as the body (up to
// 10 MiB, not the 1 MiB of JSON bodies). What the body is checked for here (its type and size)
// answers 400 whatever the caller's role; the service checks the role, the project and then
// the file.
func (s *Server) importTestCases(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, params, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "text/csv" && mt != "application/csv") {
			writeDomainError(w, errImportType)
			return
		}
		if cs := strings.ToLower(params["charset"]); cs != "" && cs != "utf-8" && cs != "utf8" && cs != "us-ascii" {
			writeDomainError(w, domain.BadRequest("Invalid content type", "Send the CSV file in UTF-8 (charset=utf-8)"))
			return
		}
	}
	if r.ContentLength > testcases.MaxImportBytes {
		writeDomainError(w, errImportTooLarge)
		return
	}
	file, err := io.ReadAll(http.MaxBytesReader(w, r.Body, testcases.MaxImportBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeDomainError(w, errImportTooLarge)
		} else {
			writeDomainError(w, domain.BadRequest("Invalid CSV", "The request body could not be read"))
		}
		return
	}
	res, err := s.testCases.Import(r.Context(), principalFrom(r), r.URL.Query().Get("projectId"), file)
	if err != nil {
		s.fail(w, r, err, "Failed to import test cases")
		return
	}
	out := ImportResult{Imported: res.Imported, Updated: res.Updated, Skipped: make([]SkippedRow, len(res.Skipped))}
	for i, sk := range res.Skipped {
		out.Skipped[i] = SkippedRow{Line: sk.Line, Reason: sk.Reason}
	}
	ok(w, obj{"data": out})
}
