package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"verdict/internal/domain"
)

// ParseAllure reads the Allure 2 result files of one run (the contents of its
// `*-result.json` files, in any order) and returns one result per test.
//
// Results that share a historyId are attempts of one test (retries), ordered by their stop
// time: the latest decides, and a pass after a failure is flaky. historyId is preferred over
// testCaseId because it also covers parameters: allure-playwright gives a test the same
// testCaseId in every project and a different historyId per project. Copies of one result
// (same uuid) count once. failed and broken fail a test; unknown and any other status also do,
// since nothing vouches for it. The suite is the parentSuite › suite › subSuite labels.
//
// All files parse or none; ErrUnrecognized when one is not an Allure result.
func ParseAllure(files ...[]byte) ([]domain.TestResult, error) {
	limited := len(files) > maxTests
	if limited {
		files = files[:maxTests]
	}
	results := make([]allureResult, 0, len(files))
	for i, data := range files {
		r, err := decodeAllure(data)
		if err != nil {
			return nil, fmt.Errorf("allure result %d: %w", i, err)
		}
		results = append(results, r)
	}
	if limited {
		return mergeAllure(results), ErrLimit
	}
	return mergeAllure(results), nil
}

// allureFile is the part of an Allure result file that the verdict needs.
type allureFile struct {
	UUID          string `json:"uuid"`
	HistoryID     string `json:"historyId"`
	TestCaseID    string `json:"testCaseId"`
	Name          string `json:"name"`
	FullName      string `json:"fullName"`
	Status        string `json:"status"`
	Start         int64  `json:"start"`
	Stop          int64  `json:"stop"`
	StatusDetails struct {
		Message string `json:"message"`
	} `json:"statusDetails"`
	Labels []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"labels"`
	allureStep
}

// allureStep holds the attachments of a result or of one of its steps, which nest: a source is
// a file's name in the results folder.
type allureStep struct {
	Attachments []struct {
		Name   string `json:"name"`
		Source string `json:"source"`
		Type   string `json:"type"`
	} `json:"attachments"`
	Steps []allureStep `json:"steps"`
}

// attachments appends the step's attachments, then its steps', up to maxAttachments.
func (s *allureStep) attachments(into []domain.Attachment) []domain.Attachment {
	for _, a := range s.Attachments {
		if len(into) == maxAttachments {
			return into
		}
		if at, ok := attachment(a.Name, a.Type, a.Source); ok {
			into = append(into, at)
		}
	}
	for i := range s.Steps {
		into = s.Steps[i].attachments(into)
	}
	return into
}

// allureResult is one decoded result, its texts already bounded: ParseDir holds every result
// of a run before grouping them.
type allureResult struct {
	uuid, historyID, testCaseID, fullName string
	name, suite                           string
	start, stop                           int64
	attempt                               attempt
}

// decodeAllure decodes one result file; a JSON object without a status and a name is not one.
func decodeAllure(data []byte) (allureResult, error) {
	var f allureFile
	if err := json.Unmarshal(data, &f); err != nil {
		return allureResult{}, err
	}
	if f.Status == "" || (f.Name == "" && f.FullName == "") {
		return allureResult{}, ErrUnrecognized
	}
	r := allureResult{
		uuid: f.UUID, historyID: f.HistoryID, testCaseID: f.TestCaseID, fullName: f.FullName,
		name:  boundText(cmp.Or(f.Name, f.FullName), maxTextBytes),
		start: f.Start, stop: f.Stop,
		attempt: attempt{status: domain.TestFailed, err: errorText(f.StatusDetails.Message), attachments: f.attachments(nil)},
	}
	switch f.Status {
	case "passed":
		r.attempt.status = domain.TestPassed
	case "skipped":
		r.attempt.status = domain.TestSkipped
	}
	if f.Stop > f.Start {
		r.attempt.durationMs = millis(float64(f.Stop - f.Start))
	}
	var parts []string
	for _, want := range []string{"parentSuite", "suite", "subSuite"} {
		for _, l := range f.Labels {
			if v := strings.TrimSpace(l.Value); l.Name == want && v != "" {
				parts = append(parts, v)
				break
			}
		}
	}
	r.suite = boundText(strings.Join(parts, " › "), maxTextBytes)
	return r, nil
}

// key groups the attempts of one test; a result without identifiers (i is its position)
// stands alone.
func (r *allureResult) key(i int) string {
	for _, k := range []string{r.historyID, r.testCaseID, r.fullName, r.uuid} {
		if k != "" {
			return "id:" + k
		}
	}
	return "#" + strconv.Itoa(i)
}

// mergeAllure groups results into tests, in the order each test was first seen.
func mergeAllure(results []allureResult) []domain.TestResult {
	groups := map[string][]*allureResult{}
	var order []string
	uuids := map[string]bool{}
	for i := range results {
		r := &results[i]
		if r.uuid != "" {
			if uuids[r.uuid] {
				continue
			}
			uuids[r.uuid] = true
		}
		k := r.key(i)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	out := make([]domain.TestResult, 0, len(order))
	for _, k := range order {
		g := groups[k]
		slices.SortStableFunc(g, func(a, b *allureResult) int {
			return cmp.Or(cmp.Compare(a.stop, b.stop), cmp.Compare(a.start, b.start))
		})
		attempts := make([]attempt, len(g))
		for i, r := range g {
			attempts[i] = r.attempt
		}
		last := g[len(g)-1]
		out = append(out, settle(last.name, last.suite, attempts))
	}
	return out
}
