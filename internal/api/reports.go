package api

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"verdict/internal/domain"
	"verdict/internal/report"
	"verdict/internal/traceviewer"
)

// reportCookie holds a run's browsing-link token, scoped to that run's report path. It is used
// only when reports share the API's origin.
const reportCookie = "verdict_report"

// reportToken signs a 5-minute exchange token for the caller and this run (its execution ID,
// never reused, rather than its taskId, which a later run may take) and the URL that opens the
// run's main report with it: its view's link (absolute, on the reports origin when there is
// one) with the token. A run with no folder that opens (none holds an index.html) has no link
// to give: 404.
func (s *Server) reportToken(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r)
	// The links need the run's reports, never its parsed results; with ?shard=N, the reports of
	// the sharded run's N-th container.
	e, _, _, err := s.logSource(r, p)
	if err != nil {
		s.fail(w, r, err, "Failed to create report token")
		return
	}
	if e.FilesExpiredAt != nil {
		writeDomainError(w, errReportExpired(e))
		return
	}
	now := s.clock()
	// The link opens the run's main report: the HTML report, else Allure's, else the first.
	s.recordIndexes(r.Context(), e)
	view := s.views.ExecutionListItem(e, now)
	var target string
	switch {
	case view.HTMLReportURL != nil:
		target = *view.HTMLReportURL
	case view.AllureReportURL != nil:
		target = *view.AllureReportURL
	case len(view.Artifacts) > 0:
		target = view.Artifacts[0]
	default:
		writeDomainError(w, errNoReport)
		return
	}
	tok := s.signer.Sign(p.OrgID, e.ID, p.UserID, now)
	ok(w, obj{"token": tok, "expiresAt": ts(now.Add(report.TokenTTL)), "url": target + "?token=" + url.QueryEscape(tok)})
}

var errNoReport = domain.NotFound("Report not found", "None of this run's report folders holds an index.html to open")

// errReportExpired answers for a run whose report files retention deleted: they are gone for
// good (410), and the run itself still opens.
func errReportExpired(e *domain.Execution) *domain.Error {
	return domain.Gone("Report expired", "The report files of run "+e.TaskID+" were deleted on "+
		e.FilesExpiredAt.UTC().Format("2006-01-02")+" under the organization's retention policy; the run, its results and its notes remain")
}

func reportBase(orgID, taskID string) string {
	return "/reports/" + orgID + "/" + url.PathEscape(taskID) + "/"
}

// redirectToLink answers a report token that checked out: the same path (rest) under
// ~<link>/, the query without the token, and, on the API's own origin, the link as the report
// cookie too.
func (s *Server) redirectToLink(w http.ResponseWriter, r *http.Request, orgID, taskID, rest, link string) {
	q := r.URL.Query()
	q.Del("token")
	if s.reportsURL == "" {
		http.SetCookie(w, &http.Cookie{Name: reportCookie, Value: link, Path: reportBase(orgID, taskID),
			MaxAge: int(report.SessionTTL / time.Second), HttpOnly: true, Secure: s.secureCookies, SameSite: http.SameSiteLaxMode})
	}
	target := reportBase(orgID, taskID) + "~" + link + "/" + (&url.URL{Path: rest}).EscapedPath()
	if enc := q.Encode(); enc != "" {
		target += "?" + enc
	}
	report.SetHeaders(w.Header()) // among them no-store: the target holds a token
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// serveReport serves a run's report files to a member of its organization: by a signed report
// token, or, on the API's own origin only, by bearer token or API key. A short-lived token in
// the query (from reportToken) is swapped for a browsing link,
// /reports/{org}/{task}/~<token>/<path>, whose token is good for report.SessionTTL; on the API's
// origin also for a cookie scoped to the run's report path holding the same token. The link
// exists because a report is a sandboxed page with an opaque origin
// (report.ContentSecurityPolicy) whose requests for its own files carry no cookie; its relative
// links keep the token. Files served through a link may be read by any origin's scripts (the
// sandboxed page's is "null"): the URL itself is the credential.
//
// Every token names the user it was made for, and the user is read on every request: one who
// has been suspended, deleted or moved to another organization since is refused at once, as
// their bearer token would be. A token also names the execution's ID, so once a run is deleted
// its links open nothing, not even a later run with the same taskId.
//
// On a separate reports origin (Deps.ReportsURL; ServeHTTP sends only /reports/ there) neither
// cookies nor bearer tokens and API keys are taken, and no cookie is set: that origin holds no
// credential of the API's. Anything refused is a plain 404 that tells nothing.
func (s *Server) serveReport(w http.ResponseWriter, r *http.Request) {
	orgID, taskID, rel := r.PathValue("org"), r.PathValue("task"), r.PathValue("path")
	notFound := func() { report.SetHeaders(w.Header()); http.NotFound(w, r) }
	if !domain.IsObjectID(orgID) || !domain.ValidStoredTaskID(taskID) {
		notFound()
		return
	}
	separate := s.reportsURL != ""
	// A first segment "~<token>" is a path token (no report folder starts with "~"); rest is
	// the path without it.
	pathToken, rest, inPath := "", rel, strings.HasPrefix(rel, "~")
	if inPath {
		pathToken, rest, _ = strings.Cut(rel[1:], "/")
	}
	queryToken := r.URL.Query().Get("token")
	cookie := ""
	if c, err := r.Cookie(reportCookie); err == nil && !separate {
		cookie = c.Value
	}
	credentials := !separate && (r.Header.Get("Authorization") != "" || r.Header.Get("X-Api-Key") != "")
	// What can be checked without the run is checked first, so that anonymous garbage costs no
	// database read: a token's shape and expiry (its signature covers the run's ID, read
	// below), and a bearer token's or API key's organization.
	now := s.clock()
	if cookie != "" && !report.Plausible(cookie, now) {
		cookie = "" // a stale cookie: other credentials may still open the report
	}
	if (queryToken != "" && !report.Plausible(queryToken, now)) || (inPath && !report.Plausible(pathToken, now)) ||
		(queryToken == "" && !inPath && cookie == "" && !credentials) {
		notFound()
		return
	}
	// principal tells whether the request's bearer token or API key is a member's of this
	// organization, asked once.
	checked, byCredentials := false, false
	principal := func() bool {
		if !checked {
			p, err := s.principalOf(r)
			checked, byCredentials = true, err == nil && p.OrgID == orgID
		}
		return byCredentials
	}
	if queryToken == "" && !inPath && cookie == "" && !principal() {
		notFound()
		return
	}
	// The run as listed: its parsed results are never read here.
	e, err := s.executions.FindForReport(r.Context(), orgID, taskID)
	if err != nil {
		notFound()
		return
	}
	// member checks a token's user as the API checks a bearer token's: still there, active, and
	// in this organization (one indexed read; no cache, so a suspension counts at once).
	member := func(userID string, err error) bool {
		if err != nil {
			return false
		}
		_, err = s.identity.AuthenticateClaims(r.Context(), userID, orgID)
		return err == nil
	}
	if queryToken != "" {
		userID, err := s.signer.Verify(queryToken, orgID, e.ID, now)
		if !member(userID, err) {
			notFound()
			return
		}
		s.redirectToLink(w, r, orgID, taskID, rest, s.signer.SignLink(orgID, e.ID, userID, now))
		return
	}
	allowed := false
	switch {
	case inPath:
		allowed = member(s.signer.VerifyLink(pathToken, orgID, e.ID, now))
		rel = rest
	case cookie != "" && member(s.signer.VerifyLink(cookie, orgID, e.ID, now)):
		allowed = true
	case credentials:
		allowed = principal()
	}
	if !allowed {
		notFound()
		return
	}
	if e.FilesExpiredAt != nil {
		report.SetHeaders(w.Header())
		writeDomainError(w, errReportExpired(e))
		return
	}
	// A Playwright report's "View trace" opens the trace in Verdict's viewer (traceviewer).
	if target, ok := traceviewer.FromReport(rel, r.URL.Query()); ok {
		report.SetHeaders(w.Header()) // no-store, no-referrer: the target holds a report link
		http.Redirect(w, r, target, http.StatusSeeOther)
		return
	}
	if inPath {
		w.Header().Set("Access-Control-Allow-Origin", "*")
	}
	report.Serve(w, r, s.reports, orgID, taskID, rel)
}

// serveTraceViewer serves Verdict's copy of Playwright's trace viewer (package traceviewer):
// public, trusted files, on the origin that serves reports.
func serveTraceViewer(w http.ResponseWriter, r *http.Request) { traceviewer.ServeHTTP(w, r) }

// reportsHost is the host of ReportsURL as splitOrigins compares it.
func reportsHost(reportsURL string) string {
	u, err := url.Parse(reportsURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		panic("api: ReportsURL is not an http(s) origin: " + reportsURL) // config.Load validates it
	}
	return hostKey(u.Host)
}

// hostKey is a Host header value as compared: lower-case, without a default port (browsers
// leave it out; other clients may write it).
func hostKey(h string) string {
	h = strings.ToLower(h)
	for _, port := range []string{":80", ":443"} {
		if rest, ok := strings.CutSuffix(h, port); ok {
			return rest
		}
	}
	return h
}

// splitOrigins keeps tenant pages off the API's origin when reports have their own. A request
// is on the reports origin when its Host header names ReportsURL's host (any case, the default
// port written or not); every other request, whatever host it names, is on the API's origin.
// X-Forwarded-Host is not read, so a proxy in front must pass the Host header through. The
// reports origin answers 404 to anything but /reports/ and the trace viewer (/trace/, which
// opens report links of its own origin); the API's origin redirects those there (307, path
// and query kept: links issued before the setting keep working). It reports whether r goes on
// to the routes.
func (s *Server) splitOrigins(w http.ResponseWriter, r *http.Request) bool {
	onReports := hostKey(r.Host) == s.reportsHost
	isReport := strings.HasPrefix(r.URL.Path, "/reports/") || strings.HasPrefix(r.URL.Path, traceviewer.Prefix)
	switch {
	case onReports && !isReport:
		report.SetHeaders(w.Header())
		http.NotFound(w, r)
		return false
	case !onReports && isReport:
		report.SetHeaders(w.Header()) // no-store, no-referrer: the URL may hold a token
		http.Redirect(w, r, s.reportsURL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
		return false
	}
	return true
}
