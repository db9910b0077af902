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
	"verdict/internal/httpkind"
	"verdict/internal/identity"
	"verdict/internal/integrations"
	"verdict/internal/store"
)

// pageNames are the templates under templates/, each rendered inside layout.html.
var pageNames = []string{"login", "signup", "invitation", "runs", "run", "projects", "project", "billing", "settings", "error", "members", "api-keys",
	"overview", "test-cases", "test-case", "planner", "plan", "integrations"}

func parsePages() map[string]*template.Template {
	funcs := template.FuncMap{
		"duration": formatDuration,
		"time":     func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
		"iso":      func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
		"bytes":    formatBytes,
		"lower":    func(s domain.ExecStatus) string { return strings.ToLower(string(s)) },
		"percent":  func(f float64) string { return strconv.Itoa(int(f*100+0.5)) + "%" },
		"log":      renderLog,
		// The registered trackers, and a tracker's name by its provider.
		"trackers":    integrations.Trackers,
		"trackerName": trackerName,
		"caseFields": func(c caseForm, p []domain.Priority) caseFieldsData {
			return caseFieldsData{Case: c, Priorities: p}
		},
	}
	out := map[string]*template.Template{}
	for _, name := range pageNames {
		files := []string{"templates/layout.html", "templates/" + name + ".html"}
		if name == "project" || name == "projects" {
			files = append(files, "templates/project-fields.html")
		}
		if name == "test-cases" || name == "test-case" {
			files = append(files, "templates/case-fields.html")
		}
		out[name] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, files...))
	}
	return out
}

// page is what every template gets: the layout's fields and the page's own data.
type page struct {
	Title string
	User  *domain.User
	Org   *domain.Organization
	CSRF  string
	Nav   string // the navigation entry of this page
	// CanWrite: the user may queue, cancel and delete runs and change projects (the services
	// refuse anyone else anyway); Flash is the outcome of the action that led here.
	CanWrite bool
	Flash    *flash
	// Live loads static/live.js (the pages that update live).
	Live bool
	Data any
}

// render writes a page; a template failure is logged and answers a plain 500.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name, title string, data any) {
	st := stateOf(r)
	if st.flash == nil && st.p != nil {
		// Taken here, by the page that shows it, not by whatever signed-in request comes
		// first: a script's fetch of the page before would otherwise swallow it.
		st.flash = takeFlash(w, r, s.secure)
	}
	var buf bytes.Buffer
	err := s.pages[name].ExecuteTemplate(&buf, "layout", page{Title: title, User: st.user, Org: st.org,
		CSRF: st.csrf, Nav: name, CanWrite: st.p != nil && st.p.CanWrite(), Flash: st.flash,
		Live: s.tickets != nil && (name == "runs" || name == "run"), Data: data})
	if err != nil {
		s.log.Error("rendering a page", "page", name, "err", err)
		http.Error(w, "Internal server error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

type errorData struct {
	Heading, Message string
	Status           int
}

func (s *Server) errorPage(w http.ResponseWriter, r *http.Request, status int, heading, message string) {
	s.render(w, r, status, "error", heading, errorData{Heading: heading, Message: message, Status: status})
}

// statusOf is the status that answers e: the one place the dashboard turns an error's kind into
// an HTTP status (httpkind's table, the API's too).
func statusOf(e *domain.Error) int { return httpkind.Status(e.Kind) }

// fail shows a service's error as a page: a domain error with its status and texts, anything
// else as a logged 500.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var de *domain.Error
	if errors.As(err, &de) {
		s.errorPage(w, r, statusOf(de), de.Code, de.Message)
		return
	}
	if de, away := s.outage.Refusal(err); away {
		w.Header().Set("Retry-After", strconv.Itoa(de.Fields["retryAfter"].(int)))
		s.errorPage(w, r, statusOf(de), de.Code, de.Message)
		return
	}
	s.log.Error("serving a page", "path", r.URL.Path, "err", err)
	s.errorPage(w, r, http.StatusInternalServerError, "Something went wrong", "An internal error occurred; it has been logged.")
}

// formError is a service's refusal of a form, shown above the form, with the form's status.
// plainRefusal answers a fragment's request (text, for a script) that met a dependency
// that is away: 503 with Retry-After. false: err is something else.
func (s *Server) plainRefusal(w http.ResponseWriter, err error) bool {
	de, away := s.outage.Refusal(err)
	if away {
		w.Header().Set("Retry-After", strconv.Itoa(de.Fields["retryAfter"].(int)))
		http.Error(w, de.Message, statusOf(de))
	}
	return away
}

type formError struct {
	Status  int
	Title   string
	Message string
}

// formErrorOf explains err on a form: a domain error as the service words it (a locked
// account, a rate limit and their wait included), anything else as a logged 500.
func (s *Server) formErrorOf(r *http.Request, err error) *formError {
	var de *domain.Error
	if away, ok := s.outage.Refusal(err); ok {
		de = away
	} else if !errors.As(err, &de) {
		s.log.Error("serving a form", "path", r.URL.Path, "err", err)
		return &formError{Status: http.StatusInternalServerError, Title: "Something went wrong", Message: "An internal error occurred; it has been logged."}
	}
	fe := &formError{Status: statusOf(de), Title: de.Code, Message: de.Message}
	if secs, ok := de.Fields["retryAfter"].(int); ok && secs > 0 {
		fe.Message += fmt.Sprintf(" (wait %s).", formatDuration(int64(secs)*1000))
	} else if n, ok := de.Fields["attemptsRemaining"].(int); ok {
		fe.Message += fmt.Sprintf(" (%d attempts left before the account is locked for a while).", n)
	}
	return fe
}

// limited takes r from the rate-limit bucket of the API route doing the same action, counted as
// the route counts it (by the signed-in caller's organization, or by client IP), and sets
// Retry-After on w when the bucket is empty: the error says when to try again.
func (s *Server) limited(w http.ResponseWriter, r *http.Request, bucket string) error {
	if s.limit == nil {
		return nil
	}
	err := s.limit(r, bucket, stateOf(r).p)
	var de *domain.Error
	if errors.As(err, &de) {
		if secs, ok := de.Fields["retryAfter"].(int); ok {
			w.Header().Set("Retry-After", strconv.Itoa(secs))
		}
	}
	return err
}

// takes serves a signed-in action after taking it from bucket, the rate-limit bucket of its
// API twin (limited): when the bucket is empty, the answer is a 429 that says when to try
// again and h does nothing. htmx swaps in no error answer, so to an htmx request the 429 sends
// the browser back to the page it is on (HX-Redirect) with the refusal as its flash message.
func (s *Server) takes(bucket string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		err := s.limited(w, r, bucket)
		if err == nil {
			h(w, r)
			return
		}
		var de *domain.Error
		if r.Header.Get("HX-Request") != "true" || !errors.As(err, &de) {
			s.fail(w, r, err)
			return
		}
		back := "/runs"
		if u, perr := url.Parse(r.Header.Get("HX-Current-URL")); perr == nil && localPath(u.RequestURI()) != "" {
			back = u.RequestURI()
		}
		s.setFlash(w, flash{Error: true, Text: de.Code + ": " + de.Message})
		w.Header().Set("HX-Redirect", back)
		w.WriteHeader(statusOf(de))
	}
}

func (s *Server) home(w http.ResponseWriter, r *http.Request) {
	if _, _, err := s.principalOf(r); err == nil {
		redirect(w, r, "/runs")
		return
	}
	redirect(w, r, "/login")
}

type loginData struct {
	Email string
	// Next is where signing in leads (a path on this site; "" for /runs).
	Next  string
	Error *formError
}

// localPath is next when it is a path on this site, else "": a sign-in link cannot send the
// browser to another site (no scheme, no host, no protocol-relative "//", no backslash).
func localPath(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return ""
	}
	if u, err := url.Parse(next); err != nil || u.Scheme != "" || u.Host != "" {
		return ""
	}
	return next
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	next := localPath(r.URL.Query().Get("next"))
	if stateOf(r).p != nil {
		redirect(w, r, cmp.Or(next, "/runs"))
		return
	}
	s.render(w, r, http.StatusOK, "login", "Sign in", loginData{Next: next})
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	email, next := r.PostFormValue("email"), localPath(r.PostFormValue("next"))
	err := s.limited(w, r, "login")
	var sess *identity.Session
	if err == nil {
		sess, err = s.identity.Login(r.Context(), email, r.PostFormValue("password"))
	}
	if err != nil {
		fe := s.formErrorOf(r, err)
		s.render(w, r, fe.Status, "login", "Sign in", loginData{Email: email, Next: next, Error: fe})
		return
	}
	s.setSession(w, sess.Token)
	redirect(w, r, cmp.Or(next, "/runs"))
}

type signupData struct {
	Email, Name, OrganizationName string
	Error                         *formError
}

func (s *Server) signupPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "signup", "Create an account", signupData{})
}

func (s *Server) signup(w http.ResponseWriter, r *http.Request) {
	in := identity.SignupInput{Email: r.PostFormValue("email"), Password: r.PostFormValue("password"),
		Name: r.PostFormValue("name"), OrganizationName: r.PostFormValue("organizationName")}
	err := s.limited(w, r, "signup")
	var sess *identity.Session
	if err == nil {
		sess, err = s.identity.Signup(r.Context(), in)
	}
	if err != nil {
		fe := s.formErrorOf(r, err)
		s.render(w, r, fe.Status, "signup", "Create an account", signupData{Email: in.Email, Name: in.Name,
			OrganizationName: in.OrganizationName, Error: fe})
		return
	}
	s.setSession(w, sess.Token)
	redirect(w, r, "/runs")
}

type invitationData struct {
	Token string
	// Return is this page's address, for the sign-in link of an existing user.
	Return  string
	Preview *identity.InvitationPreview
	// Refused explains a token that cannot be used (unknown, used, revoked, expired).
	Refused *formError
	// Form is the refusal of a submitted form (signup or accept).
	Error *formError
	Name  string
	// SignedInAs is the signed-in user's e-mail; WrongUser: it is not the invitation's.
	SignedInAs string
	WrongUser  bool
}

func (s *Server) invitationData(r *http.Request, token string) (invitationData, int) {
	d := invitationData{Token: token, Return: "/accept-invitation?token=" + url.QueryEscape(token)}
	if st := stateOf(r); st.user != nil {
		d.SignedInAs = st.user.Email
	}
	prev, err := s.identity.ValidateInvitation(r.Context(), token)
	if err != nil {
		d.Refused = s.formErrorOf(r, err)
		return d, d.Refused.Status
	}
	d.Preview = prev
	d.WrongUser = d.SignedInAs != "" && d.SignedInAs != prev.Email
	return d, http.StatusOK
}

func (s *Server) invitationPage(w http.ResponseWriter, r *http.Request) {
	d, status := s.invitationData(r, strings.TrimSpace(r.URL.Query().Get("token")))
	s.render(w, r, status, "invitation", "Invitation", d)
}

// acceptInvitation joins the inviting organization: a signed-in user accepts (and gets the
// new organization's session), a new user signs up with the token.
func (s *Server) acceptInvitation(w http.ResponseWriter, r *http.Request) {
	token := strings.TrimSpace(r.PostFormValue("token"))
	st := stateOf(r)
	var sessionToken string
	var err error
	if st.p != nil {
		// As POST /api/invitations/accept.
		var acc *identity.Accepted
		if err = s.limited(w, r, "invitations"); err == nil {
			if acc, err = s.identity.AcceptInvitation(r.Context(), st.p, token); err == nil {
				sessionToken = acc.Token
			}
		}
	} else if err = s.limited(w, r, "signup"); err == nil {
		var sess *identity.Session
		sess, err = s.identity.Signup(r.Context(), identity.SignupInput{Email: r.PostFormValue("email"),
			Password: r.PostFormValue("password"), Name: r.PostFormValue("name"), InviteToken: token})
		if err == nil {
			sessionToken = sess.Token
		}
	}
	if err != nil {
		d, _ := s.invitationData(r, token)
		d.Error, d.Name = s.formErrorOf(r, err), r.PostFormValue("name")
		s.render(w, r, d.Error.Status, "invitation", "Invitation", d)
		return
	}
	s.setSession(w, sessionToken)
	redirect(w, r, "/runs")
}

// logout signs out: the session's token is revoked on the server (refused from now on, its
// live connections ended) and the cookie cleared. If the revocation fails the cookie is kept,
// so that signing out again can end the session; a cookie that no longer authenticates has
// nothing left to revoke.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if p := stateOf(r).p; p != nil {
		if err := s.identity.RevokeSession(r.Context(), p); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	s.clearSession(w)
	redirect(w, r, "/login")
}

// runsPageSize is the number of runs on a page of /runs.
const runsPageSize = 25

type runRow struct {
	TaskID, Project, Image, Trigger string
	Status                          domain.ExecStatus
	Duration                        string
	QueuedAt                        time.Time
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
	s.render(w, r, http.StatusOK, "runs", "Runs", d)
}

// logLimit bounds the log shown on a run's page; the API serves the whole log.
const logLimit = 1 << 20

// runTestsPage is how many tests a run's page shows at once, failures first; the others are
// on further pages (?testsPage=). A test's message is up to 4 KiB, which HTML may write four
// times as long: a page of tests stays under a megabyte.
const runTestsPage = 50

type runData struct {
	Run       *domain.Execution
	Project   string
	Duration  string
	Tests     []domain.TestResult // one page of the kept tests, failures first
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

	// TestsFrom and TestsTo number the page's tests among the TestsKept the run kept (from 1);
	// TestsNotKept are the run's tests past what a run keeps, counted in its summary only.
	TestsFrom, TestsTo, TestsKept, TestsNotKept int
	TestsPrevURL, TestsNextURL                  string
}

func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	st := stateOf(r)
	e, err := s.executions.Get(r.Context(), st.p, r.PathValue("taskId"))
	if err != nil {
		var de *domain.Error
		if errors.As(err, &de) && de.Kind == domain.KindNotFound {
			s.errorPage(w, r, http.StatusNotFound, "Run not found", "There is no run with this ID in your organization.")
			return
		}
		s.fail(w, r, err)
		return
	}
	d := runData{Run: e, Finished: e.Status.Final(), AnalysisActions: s.analysisActionsFor(e, st.p.CanWrite())}
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
	if s.reportLink != nil {
		d.ReportURL = s.reportLink(r.Context(), st.p, e)
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

func formatDuration(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Second:
		return strconv.FormatInt(ms, 10) + " ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
	case d < time.Hour:
		return fmt.Sprintf("%d min %d s", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%d h %d min", int(d.Hours()), int(d.Minutes())%60)
}

func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
