package report

import (
	"archive/tar"
	"bytes"
	"cmp"
	"html/template"
	"slices"

	"verdict/internal/domain"
)

// ResultsFolder is the folder of the results report Verdict writes for a run whose suite wrote
// test results but no HTML report of its own (pytest without pytest-html, JUnit, Go).
const ResultsFolder = "verdict-results"

var resultsPage = template.Must(template.New("results").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Test results of {{.TaskID}}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2rem;color:#1f2328}
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:2rem;border-bottom:1px solid #d0d7de}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.3rem .5rem;vertical-align:top;border-bottom:1px solid #eaeef2}
.failed{color:#b42318;font-weight:600}.passed{color:#1a7f37}.flaky{color:#9a6700;font-weight:600}.skipped{color:#6e7781}
pre{white-space:pre-wrap;margin:.3rem 0 0;font-size:12px;background:#f6f8fa;padding:.5rem;border-radius:4px}
.counts span{margin-right:1rem}
</style></head><body>
<h1>Test results of {{.TaskID}}</h1>
<p class="counts"><span>{{.Summary.Total}} tests</span><span class="passed">{{.Summary.Passed}} passed</span><span class="failed">{{.Summary.Failed}} failed</span><span class="flaky">{{.Summary.Flaky}} flaky</span><span class="skipped">{{.Summary.Skipped}} skipped</span></p>
{{range .Suites}}<h2>{{if .Name}}{{.Name}}{{else}}(no suite){{end}}</h2>
<table><thead><tr><th scope="col">Test</th><th scope="col">Status</th><th scope="col">Duration</th><th scope="col">Retries</th></tr></thead><tbody>
{{range .Tests}}<tr><td>{{.Name}}{{if .Error}}<pre>{{.Error}}</pre>{{end}}</td><td class="{{.Status}}">{{.Status}}</td><td>{{.DurationMs}} ms</td><td>{{.Retries}}</td></tr>
{{end}}</tbody></table>
{{end}}</body></html>
`))

type resultsSuite struct {
	Name  string
	Tests []domain.TestResult
}

// ResultsArchive is the results report of a run's tests as an archive for Store.Put: an
// index.html of the tests by suite (suites by name; in each, failed tests first, then flaky,
// then the others, by name), with their statuses, durations, retries and errors.
func ResultsArchive(taskID string, tests []domain.TestResult) (*bytes.Buffer, error) {
	bySuite := map[string][]domain.TestResult{}
	for _, t := range tests {
		bySuite[t.Suite] = append(bySuite[t.Suite], t)
	}
	rank := func(s domain.TestStatus) int {
		switch s {
		case domain.TestFailed:
			return 0
		case domain.TestFlaky:
			return 1
		}
		return 2
	}
	suites := make([]resultsSuite, 0, len(bySuite))
	for name, ts := range bySuite {
		slices.SortStableFunc(ts, func(a, b domain.TestResult) int {
			return cmp.Or(cmp.Compare(rank(a.Status), rank(b.Status)), cmp.Compare(a.Name, b.Name))
		})
		suites = append(suites, resultsSuite{Name: name, Tests: ts})
	}
	slices.SortFunc(suites, func(a, b resultsSuite) int { return cmp.Compare(a.Name, b.Name) })
	var page bytes.Buffer
	if err := resultsPage.Execute(&page, struct {
		TaskID  string
		Summary domain.Summary
		Suites  []resultsSuite
	}{taskID, domain.Summarize(tests), suites}); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	if err := tw.WriteHeader(&tar.Header{Name: ResultsFolder + "/", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
		return nil, err
	}
	if err := tw.WriteHeader(&tar.Header{Name: ResultsFolder + "/index.html", Typeflag: tar.TypeReg, Mode: 0o644,
		Size: int64(page.Len())}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(page.Bytes()); err != nil {
		return nil, err
	}
	return &out, tw.Close()
}
