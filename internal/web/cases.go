package web

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"verdict/internal/domain"
	"verdict/internal/store"
	"verdict/internal/testcases"
)

// The manual test cases (/test-cases): a project's list with the service's filters (suite,
// tag), the form that creates one, a page per test case with its edit form and delete button,
// and the CSV import. Every write goes through testcases.Service, which decides the role.

const casesPath = "/test-cases"

var errCasesOff = domain.Unavailable("Test cases not available", "Manual test cases are not available on this server")

// caseForm is a test case as its form shows it: tags comma-separated, steps one a line with
// the expected result after " | ".
type caseForm struct {
	ID, ProjectID, Title, Suite, Tags, Priority, Preconditions, Steps string
}

func viewCase(c *domain.TestCase) caseForm {
	f := caseForm{ID: c.ID, ProjectID: c.ProjectID, Title: c.Title, Suite: c.Suite, Tags: strings.Join(c.Tags, ", "),
		Priority: string(c.Priority), Preconditions: c.Preconditions}
	lines := make([]string, len(c.Steps))
	for i, st := range c.Steps {
		lines[i] = st.Action
		if st.Expected != "" {
			lines[i] += " | " + st.Expected
		}
	}
	f.Steps = strings.Join(lines, "\n")
	return f
}

// caseFormOf reads the test case form.
func caseFormOf(r *http.Request) caseForm {
	return caseForm{ProjectID: r.PostFormValue("project"), Title: r.PostFormValue("title"), Suite: r.PostFormValue("suite"),
		Tags: r.PostFormValue("tags"), Priority: r.PostFormValue("priority"), Preconditions: r.PostFormValue("preconditions"),
		Steps: r.PostFormValue("steps")}
}

// input is the form as the service takes it; the service trims, drops empty tags and
// validates everything.
func (f caseForm) input() testcases.Input {
	tags := []string{}
	for _, t := range strings.Split(f.Tags, ",") {
		if t = strings.TrimSpace(t); t != "" {
			tags = append(tags, t)
		}
	}
	steps := []domain.TestStep{}
	for _, line := range strings.Split(strings.ReplaceAll(f.Steps, "\r\n", "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		action, expected, _ := strings.Cut(line, "|")
		steps = append(steps, domain.TestStep{Action: strings.TrimSpace(action), Expected: strings.TrimSpace(expected)})
	}
	title, suite, priority, pre := f.Title, f.Suite, f.Priority, f.Preconditions
	return testcases.Input{ProjectID: f.ProjectID, Title: &title, Suite: &suite, Tags: &tags, Priority: &priority,
		Preconditions: &pre, Steps: &steps}
}

// caseFieldsData is what the case-fields template shows.
type caseFieldsData struct {
	Case       caseForm
	Priorities []domain.Priority
}

type caseRow struct {
	ID, Title, Suite, Priority string
	Tags                       []string
	Steps                      int
}

type casesData struct {
	Projects                []domain.Project
	Project, Suite, Tag     string
	ProjectName             string
	Cases                   []caseRow
	Total, First, Last      int
	PrevURL, NextURL        string
	Filtered                bool
	Priorities              []domain.Priority
	New                     caseForm
	Error                   *formError // the create form's refusal
	ImportError             *formError
	Import                  *testcases.ImportResult
	ListError               *formError
	Unavailable, NoProjects bool
}

// casesPageSize is the number of test cases on a page of /test-cases.
const casesPageSize = 50

// casesData reads the list of the project chosen in the query (the first project when none).
func (s *Server) casesData(r *http.Request, project string) (casesData, error) {
	st, q := stateOf(r), r.URL.Query()
	d := casesData{Project: project, Suite: q.Get("suite"), Tag: q.Get("tag"), Priorities: domain.Priorities}
	if s.testCases == nil {
		d.Unavailable = true
		return d, nil
	}
	projects, err := s.executions.ListProjects(r.Context(), st.p)
	if err != nil {
		return d, err
	}
	d.Projects = projects
	if len(projects) == 0 {
		d.NoProjects = true
		return d, nil
	}
	if d.Project == "" {
		d.Project = projects[0].ID
	}
	for _, p := range projects {
		if p.ID == d.Project {
			d.ProjectName = p.Name
		}
	}
	d.New.ProjectID = d.Project
	d.Filtered = d.Suite != "" || d.Tag != ""
	offset := 0
	if n, err := strconv.Atoi(q.Get("offset")); err == nil && n > 0 {
		offset = n
	}
	list, total, err := s.testCases.List(r.Context(), st.p, store.TestCaseFilter{ProjectID: d.Project, Suite: d.Suite,
		Tag: d.Tag, Limit: casesPageSize, Offset: offset})
	if err != nil {
		d.ListError = s.formErrorOf(r, err)
		return d, nil
	}
	d.Total = total
	for _, c := range list {
		d.Cases = append(d.Cases, caseRow{ID: c.ID, Title: c.Title, Suite: c.Suite, Priority: string(c.Priority),
			Tags: c.Tags, Steps: len(c.Steps)})
	}
	if len(list) > 0 {
		d.First, d.Last = offset+1, offset+len(list)
	}
	pageURL := func(off int) string {
		v := url.Values{"project": {d.Project}}
		if d.Suite != "" {
			v.Set("suite", d.Suite)
		}
		if d.Tag != "" {
			v.Set("tag", d.Tag)
		}
		if off > 0 {
			v.Set("offset", strconv.Itoa(off))
		}
		return casesPath + "?" + v.Encode()
	}
	if offset > 0 {
		d.PrevURL = pageURL(max(offset-casesPageSize, 0))
	}
	if offset+len(list) < total {
		d.NextURL = pageURL(offset + casesPageSize)
	}
	return d, nil
}

func (s *Server) testCasesPage(w http.ResponseWriter, r *http.Request) {
	d, err := s.casesData(r, r.URL.Query().Get("project"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "test-cases", "Test cases", d)
}

func casesOf(project string) string {
	if project == "" {
		return casesPath
	}
	return casesPath + "?project=" + url.QueryEscape(project)
}

// createTestCase saves the new test case form; a refusal shows the form again, with its
// values, under the service's words.
func (s *Server) createTestCase(w http.ResponseWriter, r *http.Request) {
	f := caseFormOf(r)
	if s.testCases == nil {
		s.fail(w, r, errCasesOff)
		return
	}
	c, err := s.testCases.Create(r.Context(), stateOf(r).p, f.input())
	if err != nil {
		d, derr := s.casesData(r, f.ProjectID)
		if derr != nil {
			s.fail(w, r, derr)
			return
		}
		d.New, d.Error = f, s.formErrorOf(r, err)
		s.render(w, r, d.Error.Status, "test-cases", "Test cases", d)
		return
	}
	s.done(w, r, casesOf(c.ProjectID), "Test case "+c.Title+" created.")
}

// importForm bounds the CSV import's form: the file and the other fields.
var importForm = formBound{bytes: testcases.MaxImportBytes + 64<<10, files: true,
	tooLarge: "The file must be at most " + formatBytes(testcases.MaxImportBytes) + "."}

// upload reads the CSV import's multipart form within importForm and checks its CSRF token
// (checkedForm), and removes the form's temporary files once h is done.
func (s *Server) upload(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ok := s.checkedForm(w, r, importForm)
		if r.MultipartForm != nil {
			defer func() { _ = r.MultipartForm.RemoveAll() }()
		}
		if ok {
			h(w, r)
		}
	}
}

// importTestCases reads the uploaded CSV file into the chosen project through the same service
// call as POST /api/test-cases/import, and answers with the list and what the import did.
func (s *Server) importTestCases(w http.ResponseWriter, r *http.Request) {
	project := r.PostFormValue("project")
	if s.testCases == nil {
		s.fail(w, r, errCasesOff)
		return
	}
	var res *testcases.ImportResult
	file, hdr, err := r.FormFile("file")
	switch {
	case err != nil:
		err = domain.BadRequest("Missing file", "Choose a CSV file to import")
	case hdr.Size > testcases.MaxImportBytes:
		err = domain.BadRequest("Request body too large", "The file must be at most "+formatBytes(testcases.MaxImportBytes))
	default:
		var data []byte
		data, err = io.ReadAll(io.LimitReader(file, testcases.MaxImportBytes+1))
		_ = file.Close()
		if err == nil {
			res, err = s.testCases.Import(r.Context(), stateOf(r).p, project, data)
		}
	}
	d, derr := s.casesData(r, project)
	if derr != nil {
		s.fail(w, r, derr)
		return
	}
	status := http.StatusOK
	if err != nil {
		d.ImportError = s.formErrorOf(r, err)
		status = d.ImportError.Status
	}
	d.Import = res
	s.render(w, r, status, "test-cases", "Test cases", d)
}

type caseData struct {
	Case        caseForm
	ProjectName string
	Priorities  []domain.Priority
	Error       *formError
}

func (s *Server) testCasePage(w http.ResponseWriter, r *http.Request) {
	if s.testCases == nil {
		s.fail(w, r, errCasesOff)
		return
	}
	c, err := s.testCases.Get(r.Context(), stateOf(r).p, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "test-case", "Test case "+c.Title, s.caseData(r, viewCase(c)))
}

func (s *Server) caseData(r *http.Request, f caseForm) caseData {
	d := caseData{Case: f, Priorities: domain.Priorities}
	if projects, err := s.executions.ListProjects(r.Context(), stateOf(r).p); err == nil {
		for _, p := range projects {
			if p.ID == f.ProjectID {
				d.ProjectName = p.Name
			}
		}
	}
	return d
}

func casePath(id string) string { return casesPath + "/" + url.PathEscape(id) }

func (s *Server) updateTestCase(w http.ResponseWriter, r *http.Request) {
	if s.testCases == nil {
		s.fail(w, r, errCasesOff)
		return
	}
	st, id := stateOf(r), r.PathValue("id")
	f := caseFormOf(r)
	f.ID = id
	in := f.input()
	in.ProjectID = ""
	c, err := s.testCases.Update(r.Context(), st.p, id, in)
	if err != nil {
		var de *domain.Error
		if errors.As(err, &de) && de.Kind == domain.KindNotFound {
			s.fail(w, r, err)
			return
		}
		if old, gerr := s.testCases.Get(r.Context(), st.p, id); gerr == nil {
			f.ProjectID = old.ProjectID
		}
		d := s.caseData(r, f)
		d.Error = s.formErrorOf(r, err)
		s.render(w, r, d.Error.Status, "test-case", "Test case", d)
		return
	}
	s.done(w, r, casePath(c.ID), "Test case saved.")
}

func (s *Server) deleteTestCase(w http.ResponseWriter, r *http.Request) {
	if s.testCases == nil {
		s.fail(w, r, errCasesOff)
		return
	}
	st, id := stateOf(r), r.PathValue("id")
	project := ""
	if c, err := s.testCases.Get(r.Context(), st.p, id); err == nil {
		project = c.ProjectID
	}
	if err := s.testCases.Delete(r.Context(), st.p, id); err != nil {
		s.refused(w, r, casePath(id), err)
		return
	}
	s.done(w, r, casesOf(project), "Test case deleted.")
}
