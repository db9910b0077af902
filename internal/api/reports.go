package api

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"verdict/internal/domain"
	"verdict/internal/report"
)

// reportCookie holds a run's browsing-link token, scoped to that run's report path.
const reportCookie = "verdict_report"

func (s *Server) reportToken(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r)
	e, err := s.runs.Get(r.Context(), p, r.PathValue("taskId"))
	if err != nil {
		s.fail(w, r, err, "Failed to create report token")
		return
	}
	now := s.clock()
	tok := s.signer.Sign(p.OrgID, e.TaskID, now)
	// The link opens the run's main report: the HTML report, else Allure's, else the first.
	view := ExecutionView(e, now)
	target, _ := view["htmlReportUrl"].(string)
	if target == "" {
		target, _ = view["allureReportUrl"].(string)
	}
	if arts := view["artifacts"].([]string); target == "" && len(arts) > 0 {
		target = arts[0]
	}
	if target == "" {
		target = reportBase(p.OrgID, e.TaskID)
	}
	ok(w, obj{"token": tok, "expiresAt": ts(now.Add(report.TokenTTL)), "url": target + "?token=" + url.QueryEscape(tok)})
}

func reportBase(orgID, taskID string) string {
	return "/reports/" + orgID + "/" + url.PathEscape(taskID) + "/"
}

// serveReport serves a run's report files to a member of its organization: by bearer token or
// API key, or by a signed report token. A short-lived token in the query (from reportToken) is
// swapped, as DECISIONS 17 rules, for a cookie scoped to the run's report path, and the query
// token leaves the URL. But a report is a sandboxed page with an opaque origin
// (report.ContentSecurityPolicy), whose requests for its own files carry no cookie, so the swap
// also lands on a browsing link, /reports/{org}/{task}/~<token>/<path>, that the page's relative
// links keep; both hold the same report.SessionTTL link token. Files served through a link may
// be read by any origin's scripts (the sandboxed page's is "null"): the URL itself is the
// credential. Anything refused is a plain 404 that tells nothing.
func (s *Server) serveReport(w http.ResponseWriter, r *http.Request) {
	orgID, taskID, rel := r.PathValue("org"), r.PathValue("task"), r.PathValue("path")
	notFound := func() { report.SetHeaders(w.Header()); http.NotFound(w, r) }
	if !domain.IsObjectID(orgID) || !domain.ValidTaskID(taskID) {
		notFound()
		return
	}
	now := s.clock()
	// A first segment "~<token>" is a path token (no report folder starts with "~"); rest is
	// the path without it.
	pathToken, rest, inPath := "", rel, strings.HasPrefix(rel, "~")
	if inPath {
		pathToken, rest, _ = strings.Cut(rel[1:], "/")
	}
	if tok := r.URL.Query().Get("token"); tok != "" {
		if s.signer.Verify(tok, orgID, taskID, now) != nil {
			notFound()
			return
		}
		q := r.URL.Query()
		q.Del("token")
		link := s.signer.SignLink(orgID, taskID, now)
		http.SetCookie(w, &http.Cookie{Name: reportCookie, Value: link, Path: reportBase(orgID, taskID),
			MaxAge: int(report.SessionTTL / time.Second), HttpOnly: true, Secure: s.secureCookies, SameSite: http.SameSiteLaxMode})
		target := reportBase(orgID, taskID) + "~" + link + "/" + (&url.URL{Path: rest}).EscapedPath()
		if enc := q.Encode(); enc != "" {
			target += "?" + enc
		}
		report.SetHeaders(w.Header()) // among them no-store: the target holds a token
		http.Redirect(w, r, target, http.StatusSeeOther)
		return
	}
	allowed := false
	if inPath {
		allowed = s.signer.VerifyLink(pathToken, orgID, taskID, now) == nil
		rel = rest
	} else if c, err := r.Cookie(reportCookie); err == nil && s.signer.VerifyLink(c.Value, orgID, taskID, now) == nil {
		allowed = true
	} else if r.Header.Get("Authorization") != "" || r.Header.Get("X-Api-Key") != "" {
		p, err := s.principalOf(r)
		allowed = err == nil && p.OrgID == orgID
	}
	if !allowed {
		notFound()
		return
	}
	if _, err := s.runs.Store.Executions().Get(r.Context(), orgID, taskID); err != nil {
		notFound()
		return
	}
	if inPath {
		w.Header().Set("Access-Control-Allow-Origin", "*")
	}
	report.Serve(w, r, s.reports, orgID, taskID, rel)
}
