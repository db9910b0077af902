package web

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"verdict/internal/domain"
	"verdict/internal/executions"
	"verdict/internal/identity"
	"verdict/internal/store"
)

// Runs: the list, a run's page and its log, and the run actions (queue, cancel, rerun, delete,
// the folder suggestions).

func runPath(taskID string) string { return "/runs/" + url.PathEscape(taskID) }

// parseVariables reads KEY=value lines; blank lines are skipped. The service validates the
// names and values.
func parseVariables(text string) (map[string]string, error) {
	vars := map[string]string{}
	for i, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, domain.BadRequest("Validation error", "variables: line "+strconv.Itoa(i+1)+" is not KEY=value")
		}
		if _, dup := vars[k]; dup {
			return nil, domain.BadRequest("Validation error", "variables: "+k+" is given twice")
		}
		vars[k] = v
	}
	return vars, nil
}

// queueRun queues a run from the form on /runs.
func (s *Server) queueRun(w http.ResponseWriter, r *http.Request) {
	vars, err := parseVariables(r.PostFormValue("variables"))
	if err != nil {
		s.refused(w, r, "/runs", err)
		return
	}
	in := executions.QueueInput{ProjectID: r.PostFormValue("project"), Environment: r.PostFormValue("environment"),
		Folder: strings.TrimSpace(r.PostFormValue("folder")), Image: strings.TrimSpace(r.PostFormValue("image"))}
	if len(vars) > 0 {
		in.EnvVars = vars
	}
	e, err := s.executions.Queue(r.Context(), stateOf(r).p, in)
	if err != nil {
		s.refused(w, r, "/runs", err)
		return
	}
	s.done(w, r, runPath(e.TaskID), "Run "+e.TaskID+" queued.")
}

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("taskId")
	if _, err := s.executions.Cancel(r.Context(), stateOf(r).p, id); err != nil {
		s.refused(w, r, runPath(id), err)
		return
	}
	s.done(w, r, runPath(id), "Cancellation requested.")
}

// rerun queues the run's image, command, environment, folder and project again. Its own
// variables are not carried over (they are stored sealed for its container only); the
// project's apply again.
func (s *Server) rerun(w http.ResponseWriter, r *http.Request) {
	st, id := stateOf(r), r.PathValue("taskId")
	old, err := s.executions.Get(r.Context(), st.p, id)
	if err != nil {
		s.refused(w, r, runPath(id), err)
		return
	}
	e, err := s.executions.Queue(r.Context(), st.p, executions.QueueInput{Image: old.Image, Command: old.Command,
		Environment: old.Environment, Folder: old.Folder, ProjectID: old.ProjectID, Labels: old.Labels})
	if err != nil {
		s.refused(w, r, runPath(id), err)
		return
	}
	s.done(w, r, runPath(e.TaskID), "Run "+e.TaskID+" queued again from "+id+".")
}

// pinRun pins (POST …/pin) or unpins (POST …/unpin) the run.
func (s *Server) pinRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("taskId")
	pinned := strings.HasSuffix(r.URL.Path, "/pin")
	if _, err := s.executions.Pin(r.Context(), stateOf(r).p, id, pinned); err != nil {
		s.refused(w, r, runPath(id), err)
		return
	}
	text := "Run unpinned: it falls under the organization's retention again."
	if pinned {
		text = "Run pinned: it is kept whatever its age until it is unpinned."
	}
	s.done(w, r, runPath(id), text)
}

func (s *Server) deleteRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("taskId")
	if err := s.executions.Delete(r.Context(), stateOf(r).p, id); err != nil {
		s.refused(w, r, runPath(id), err)
		return
	}
	s.done(w, r, "/runs", "Run "+id+" deleted.")
}

// folders answers the queue form's folder suggestions for the chosen project or image: the
// folders under the image's /app/tests as <option>s of the form's <datalist>, and what was
// found (or why nothing was) in the form's status line, swapped out of band. It takes from the
// bucket of GET /api/tests-structure, as it may make the engine pull the image; a refusal is a
// 429 with the same parts, which the page's htmx is configured to swap in.
func (s *Server) folders(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	status := http.StatusOK
	var ts *executions.TestsStructure
	err := s.limited(w, r, "api")
	if err != nil {
		status = http.StatusTooManyRequests
	} else {
		ts, err = s.executions.TestsStructure(r.Context(), stateOf(r).p, strings.TrimSpace(q.Get("image")), q.Get("project"))
	}
	note := ""
	switch {
	case err != nil:
		var de *domain.Error
		if !errors.As(err, &de) {
			s.log.Error("listing an image's test folders", "err", err)
			note = "The folders could not be listed."
		} else {
			note = de.Code + ": " + de.Message
		}
	case len(ts.Folders) == 0:
		note = cmp.Or(ts.Note, "No test folders found") + "; runs use the whole suite."
	default:
		note = strconv.Itoa(len(ts.Folders)) + " folders in " + ts.Image + ": pick one in the Folder field."
	}
	var folders []string
	if ts != nil {
		folders = ts.Folders
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := folderOptions.Execute(w, struct {
		Folders []string
		Note    string
	}{folders, note}); err != nil {
		s.log.Error("rendering folder options", "err", err)
	}
}

var folderOptions = template.Must(template.New("folders").Parse(
	`{{range .Folders}}<option value="{{.}}"></option>{{end}}<span id="q-folder-note" role="status" hx-swap-oob="true">{{.Note}}</span>`))

// runsPageSize is the number of runs on a page of /runs.
const runsPageSize = 25

type runRow struct {
	TaskID, Project, Image, Trigger string
	Status                          domain.ExecStatus
	Duration                        string
	QueuedAt                        time.Time
	Tests                           template.HTML // the tests cell: counts and their bar
	Branch                          template.HTML // the branch cell: branch and short commit
	Gate                            string        // the gate's status; "": no gate judged it
}

// testsCell is a run's tests cell of the runs list: a bar of 100 units with a segment for each
// non-zero count (passed, failed, flaky, skipped), then the counts. Written here rather than by
// the template: 25 rows of a dozen template actions each would cost the list a third of its
// time, and the cell holds only numbers and fixed words.
func testsCell(s domain.Summary) template.HTML {
	if s.Total == 0 {
		return `<span class="muted">—</span>`
	}
	var b strings.Builder
	b.WriteString(`<svg class="tests-bar" viewBox="0 0 100 6" preserveAspectRatio="none" width="80" height="6" aria-hidden="true">`)
	x := 0
	for _, seg := range [...]struct {
		class string
		n     int
	}{{"bar-passed", s.Passed}, {"bar-failed", s.Failed}, {"bar-flaky", s.Flaky}, {"bar-skipped", s.Skipped}} {
		if seg.n == 0 {
			continue
		}
		w := min(max(seg.n*100/s.Total, 2), 100-x) // a lone failure among thousands stays visible
		fmt.Fprintf(&b, `<rect class="%s" x="%d" width="%d" height="6"/>`, seg.class, x, w)
		x += w
	}
	fmt.Fprintf(&b, `</svg><span class="counts">%d passed`, s.Passed)
	if s.Failed > 0 {
		fmt.Fprintf(&b, `, <span class="bad">%d failed</span>`, s.Failed)
	}
	if s.Flaky > 0 {
		fmt.Fprintf(&b, `, %d flaky`, s.Flaky)
	}
	if s.Skipped > 0 {
		fmt.Fprintf(&b, `, %d skipped`, s.Skipped)
	}
	b.WriteString(`</span>`)
	return template.HTML(b.String())
}

// branchCell is a run's branch cell: its branch and short commit labels, escaped.
func branchCell(labels map[string]string) template.HTML {
	branch, commit := labels[domain.BranchLabel], shortCommit(labels[domain.CommitLabel])
	switch {
	case branch == "" && commit == "":
		return `<span class="muted">—</span>`
	case commit == "":
		return template.HTML(`<span class="mono">` + template.HTMLEscapeString(branch) + `</span>`)
	case branch == "":
		return template.HTML(`<span class="mono muted">` + template.HTMLEscapeString(commit) + `</span>`)
	}
	return template.HTML(`<span class="mono">` + template.HTMLEscapeString(branch) + `</span> <span class="mono muted">` +
		template.HTMLEscapeString(commit) + `</span>`)
}

// shortCommit is a commit label as lists show it: a hexadecimal SHA's first 7 digits.
func shortCommit(c string) string {
	if len(c) > 7 && strings.Trim(c, "0123456789abcdefABCDEF") == "" {
		return c[:7]
	}
	return c
}

type runsData struct {
	Runs                 []runRow
	Total                int
	Projects             []domain.Project
	Statuses             []domain.ExecStatus
	Environments         []string
	Status, Project      string
	Label                string // a key:value label filter
	Page, Pages          int
	PrevURL, NextURL     string
	Filtered             bool
	First, Last          int
	ProjectListFailed    bool
	StatusInvalid        bool
	StatusInvalidMessage string
	PageSize             int
}

var allStatuses = []domain.ExecStatus{domain.ExecPending, domain.ExecRunning, domain.ExecAnalyzing, domain.ExecPassed,
	domain.ExecFailed, domain.ExecUnstable, domain.ExecError, domain.ExecCancelled}

func (s *Server) runs(w http.ResponseWriter, r *http.Request) {
	st := stateOf(r)
	q := r.URL.Query()
	d := runsData{Statuses: allStatuses, Environments: domain.Environments, Status: q.Get("status"), Project: q.Get("project"), Page: 1, PageSize: runsPageSize}
	if n, err := strconv.Atoi(q.Get("page")); err == nil && n > 1 {
		d.Page = n
	}
	d.Label = strings.TrimSpace(q.Get("label"))
	d.Filtered = d.Status != "" || d.Project != "" || d.Label != ""
	f := store.ExecutionFilter{ProjectID: d.Project, Limit: runsPageSize, Offset: (d.Page - 1) * runsPageSize}
	if d.Label != "" {
		l, err := domain.ParseLabelFilter(d.Label)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		f.Labels = []domain.Label{l}
	}
	if d.Status != "" {
		f.Statuses = []domain.ExecStatus{domain.ExecStatus(d.Status)}
	}
	projects, err := s.executions.ListProjects(r.Context(), st.p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d.Projects = projects
	names := map[string]string{}
	for _, p := range projects {
		names[p.ID] = p.Name
	}
	list, total, err := s.executions.List(r.Context(), st.p, f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	now := s.clock()
	d.Total = total
	d.Pages = max((total+runsPageSize-1)/runsPageSize, 1)
	for i := range list {
		e := &list[i]
		row := runRow{TaskID: e.TaskID, Project: names[e.ProjectID], Image: e.Image, Status: e.Status,
			QueuedAt: e.QueuedAt, Trigger: "user"}
		if e.ProjectID != "" && row.Project == "" {
			row.Project = "(deleted project)"
		}
		if e.ViaAPIKey {
			row.Trigger = "API key"
		}
		if e.StartedAt != nil {
			row.Duration = formatDuration(e.DurationMs(now))
		}
		row.Tests, row.Branch = testsCell(e.Summary), branchCell(e.Labels)
		if e.Gate != nil {
			row.Gate = e.Gate.Status
		}
		d.Runs = append(d.Runs, row)
	}
	if len(list) > 0 {
		d.First, d.Last = f.Offset+1, f.Offset+len(list)
	}
	pageURL := func(n int) string {
		v := url.Values{}
		if d.Status != "" {
			v.Set("status", d.Status)
		}
		if d.Project != "" {
			v.Set("project", d.Project)
		}
		if d.Label != "" {
			v.Set("label", d.Label)
		}
		if n > 1 {
			v.Set("page", strconv.Itoa(n))
		}
		if len(v) == 0 {
			return "/runs"
		}
		return "/runs?" + v.Encode()
	}
	if d.Page > 1 {
		d.PrevURL = pageURL(d.Page - 1)
	}
	if d.Page < d.Pages {
		d.NextURL = pageURL(d.Page + 1)
	}
	if q.Get("fragment") == "list" {
		// The list alone, for the page's live updates to swap in: whatever its filters and
		// page, a run that belongs on it shows, as the server decides.
		s.renderPart(w, r, "runs", "runs-list", d)
		return
	}
	s.render(w, r, http.StatusOK, "runs", "Runs", d)
}

// logLimit bounds the log shown on a run's page; the API serves the whole log.
const logLimit = 1 << 20

// runTestsPage is how many tests a run's page shows at once, failures first; the others are
// on further pages (?testsPage=). A test's message is up to 4 KiB, which HTML may write four
// times as long: a page of tests stays under a megabyte.
const runTestsPage = 50

type runData struct {
	Run      *domain.Execution
	Project  string
	Duration string
	Tests    []domain.TestResult // one page of the kept tests, failures first
	// Attachments are the links of Tests' attachments, in the same order.
	Attachments [][]attachmentLink
	// TestIDs are the tracked tests of Tests, in the same order ("" for one not recorded yet):
	// their names link to their histories.
	TestIDs   []string
	ReportURL string
	Log       string
	LogCut    bool
	LogError  string
	// LogOffset is how many bytes of the log the page holds: live.js follows the log from
	// there ("" when the page does not follow it: the log was cut or could not be read).
	LogOffset string
	Finished  bool
	// Analysis is what the page offers for the failure analysis (nil: nothing).
	AnalysisActions *analysisActions
	// TicketButtons are the trackers a finished run may be filed in.
	TicketButtons []ticketButton
	// Gate is the run's quality gate (nil: none); Compare: the compare form is offered.
	Gate    *runGate
	Compare bool

	// TestsFrom and TestsTo number the page's tests among the TestsKept the run kept (from 1);
	// TestsNotKept are the run's tests past what a run keeps, counted in its summary only.
	TestsFrom, TestsTo, TestsKept, TestsNotKept int
	TestsPrevURL, TestsNextURL                  string

	// Shards are a sharded run's containers (nil: not sharded); ShardTab is the one whose log
	// the page shows (0: every container's, one after another, each line marked with its
	// container).
	Shards   []shardRow
	ShardTab int
}

// shardRow is one container of a sharded run on its page.
type shardRow struct {
	Index     int
	Label     string // "Shard 2 of 4", "Retry 1"
	Status    domain.ExecStatus
	Runner    string
	Duration  string
	ExitCode  string
	ReportURL string
	Error     string
}

func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	st := stateOf(r)
	e, err := s.executions.Get(r.Context(), st.p, r.PathValue("taskId"))
	if err != nil {
		s.failRun(w, r, err)
		return
	}
	d := runData{Run: e, Finished: e.Status.Final(), AnalysisActions: s.analysisActionsFor(e, st.p.CanWrite()),
		Gate: viewGate(e.Gate), Compare: e.Status.Final() && s.gates != nil}
	if d.Finished {
		d.TicketButtons = s.runTickets(r)
	}
	if e.StartedAt != nil {
		d.Duration = formatDuration(e.DurationMs(s.clock()))
	}
	if e.ProjectID != "" {
		if projects, err := s.executions.ListProjects(r.Context(), st.p); err == nil {
			for _, p := range projects {
				if p.ID == e.ProjectID {
					d.Project = p.Name
				}
			}
		}
	}
	s.pageTests(&d, r.URL.Query().Get("testsPage"))
	if s.histories != nil && d.Finished && len(d.Tests) > 0 {
		if ids, err := s.histories.RunTestIDs(r.Context(), st.p, e); err == nil {
			d.TestIDs = make([]string, len(d.Tests))
			for i, t := range d.Tests {
				d.TestIDs[i] = ids[t.Suite+"\x00"+t.Name]
			}
		}
	}
	if s.reportLink != nil {
		d.ReportURL = s.reportLink(r.Context(), st.p, e)
	}
	if e.Sharded() {
		s.shardLogs(r, st.p, e, &d)
		s.render(w, r, http.StatusOK, "run", "Run "+e.TaskID, d)
		return
	}
	var log bytes.Buffer
	n, err := s.executions.ReadLog(r.Context(), st.p, e, 0, logLimit+1, func(b []byte) error {
		log.Write(b)
		return nil
	})
	switch {
	case err != nil:
		s.log.Warn("reading a run's log for its page", "task", e.TaskID, "err", err)
		d.LogError = "The log could not be read."
	case n > logLimit:
		d.Log, d.LogCut = strings.ToValidUTF8(string(log.Bytes()[:logLimit]), "\uFFFD"), true
	default:
		d.Log, d.LogOffset = strings.ToValidUTF8(log.String(), "\uFFFD"), strconv.FormatInt(n, 10)
	}
	s.render(w, r, http.StatusOK, "run", "Run "+e.TaskID, d)
}

// shardLogs fills in a sharded run's containers and the log its page shows: one container's
// (?shard=N) or every container's, one after another, each line marked "[shard N]". The run's
// own record writes no log. These logs are read as the page is made (the page does not follow
// them live; each container's log is in the API, live, with ?shard=N).
func (s *Server) shardLogs(r *http.Request, p *identity.Principal, e *domain.Execution, d *runData) {
	d.ShardTab, _ = strconv.Atoi(r.URL.Query().Get("shard"))
	var parts []domain.Execution
	for i := range e.Parts {
		c := &e.Parts[i]
		row := shardRow{Index: c.ShardIndex, Status: c.Status, Runner: c.RunnerID, Error: c.Error,
			Label: fmt.Sprintf("Shard %d of %d", c.ShardIndex, e.Shards)}
		if c.Retry > 0 {
			row.Label = fmt.Sprintf("Retry %d", c.Retry)
		}
		if c.StartedAt != nil {
			row.Duration = formatDuration(c.DurationMs(s.clock()))
		}
		if c.ExitCode != nil {
			row.ExitCode = strconv.Itoa(*c.ExitCode)
		}
		if s.reportLink != nil && len(c.ReportIndexes) > 0 {
			row.ReportURL = s.reportLink(r.Context(), p, c)
		}
		d.Shards = append(d.Shards, row)
		if d.ShardTab == 0 || d.ShardTab == c.ShardIndex {
			parts = append(parts, *c)
		}
	}
	if d.ShardTab != 0 && len(parts) == 0 {
		d.LogError = fmt.Sprintf("This run has no container %d.", d.ShardTab)
		return
	}
	var log bytes.Buffer
	for i := range parts {
		c := &parts[i]
		var one bytes.Buffer
		left := int64(logLimit + 1 - log.Len())
		if left <= 0 {
			d.LogCut = true
			break
		}
		if _, err := s.executions.ReadLog(r.Context(), p, c, 0, left, func(b []byte) error {
			one.Write(b)
			return nil
		}); err != nil {
			s.log.Warn("reading a shard's log for its run's page", "task", c.TaskID, "err", err)
			d.LogError = "The log could not be read."
			return
		}
		if d.ShardTab != 0 {
			log.Write(one.Bytes())
			continue
		}
		mark := fmt.Sprintf("[shard %d] ", c.ShardIndex)
		for line := range bytes.Lines(one.Bytes()) {
			log.WriteString(mark)
			log.Write(line)
		}
		if one.Len() > 0 && !bytes.HasSuffix(one.Bytes(), []byte("\n")) {
			log.WriteByte('\n')
		}
	}
	if log.Len() > logLimit {
		d.Log, d.LogCut = strings.ToValidUTF8(string(log.Bytes()[:logLimit]), "\uFFFD"), true
		return
	}
	d.Log = strings.ToValidUTF8(log.String(), "\uFFFD")
}

// logChunk is the largest part of a log GET /runs/{taskId}/log answers at once.
const logChunk = 1 << 20

// runLog answers the bytes of a run's log from byte offset from on (at most logChunk), as
// text/plain: the run page's script fills in what it missed while it connected. X-Log-Next
// is the offset after them, X-Log-Complete whether the run has ended and the log is whole.
func (s *Server) runLog(w http.ResponseWriter, r *http.Request) {
	st := stateOf(r)
	from, err := strconv.ParseInt(r.URL.Query().Get("from"), 10, 64)
	if err != nil || from < 0 {
		http.Error(w, "from must be a byte offset", http.StatusBadRequest)
		return
	}
	// The log needs the run's ID and status, never its parsed results.
	e, err := s.executions.GetListed(r.Context(), st.p, r.PathValue("taskId"))
	if err != nil {
		var de *domain.Error
		if errors.As(err, &de) {
			http.Error(w, de.Message, statusOf(de))
			return
		}
		if s.plainRefusal(w, err) {
			return
		}
		s.log.Error("reading a run for its log", "err", err)
		http.Error(w, "Internal server error", http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	if _, err := s.executions.ReadLog(r.Context(), st.p, e, from, logChunk, func(b []byte) error {
		buf.Write(b)
		return nil
	}); err != nil {
		if s.plainRefusal(w, err) {
			return
		}
		s.log.Warn("reading a run's log", "task", e.TaskID, "err", err)
		http.Error(w, "The log could not be read.", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Log-Next", strconv.FormatInt(from+int64(buf.Len()), 10))
	h.Set("X-Log-Complete", strconv.FormatBool(e.Status.Final() && buf.Len() < logChunk))
	_, _ = w.Write(buf.Bytes())
}

// pageTests puts page (from 1; anything else is the first) of the run's kept tests in d,
// failures first, then flaky, passed and skipped, in report order within each: a run keeps up
// to domain.MaxKeptTests, far more than a page should hold.
func (s *Server) pageTests(d *runData, page string) {
	e := d.Run
	d.TestsKept, d.TestsNotKept = len(e.Tests), max(e.Summary.Total-len(e.Tests), 0)
	pages := max((len(e.Tests)+runTestsPage-1)/runTestsPage, 1)
	n, err := strconv.Atoi(page)
	if err != nil || n < 1 || n > pages {
		n = 1
	}
	order := make([]int32, len(e.Tests))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return e.Tests[a].Rank() - e.Tests[b].Rank() })
	from, to := (n-1)*runTestsPage, min(n*runTestsPage, len(e.Tests))
	for _, i := range order[from:to] {
		d.Tests = append(d.Tests, e.Tests[i])
		d.Attachments = append(d.Attachments, s.attachmentLinks(e, int(i)))
	}
	if len(d.Tests) > 0 {
		d.TestsFrom, d.TestsTo = from+1, to
	}
	pageURL := func(n int) string {
		u := "/runs/" + url.PathEscape(e.TaskID)
		if n > 1 {
			u += "?testsPage=" + strconv.Itoa(n)
		}
		return u + "#tests"
	}
	if n > 1 {
		d.TestsPrevURL = pageURL(n - 1)
	}
	if n < pages {
		d.TestsNextURL = pageURL(n + 1)
	}
}

// failRun answers an error reading a run for a page: a run that is not found (another
// organization's included) is the not-found page, anything else a failure.
func (s *Server) failRun(w http.ResponseWriter, r *http.Request, err error) {
	var de *domain.Error
	if errors.As(err, &de) && de.Kind == domain.KindNotFound {
		s.errorPage(w, r, http.StatusNotFound, "Run not found", "There is no run with this ID in your organization.")
		return
	}
	s.fail(w, r, err)
}
