package api

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"verdict/internal/domain"
	"verdict/internal/report"
)

// reportCookie carries a signed report token, scoped to one run's report path.
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
// API key, or by a signed report token. A token in the query is swapped for a cookie scoped to
// the run's report path and the URL is reloaded without it, so it stays out of history and
// Referer headers. Anything refused is a plain 404 that tells nothing.
func (s *Server) serveReport(w http.ResponseWriter, r *http.Request) {
	orgID, taskID, rel := r.PathValue("org"), r.PathValue("task"), r.PathValue("path")
	notFound := func() { report.SetHeaders(w.Header()); http.NotFound(w, r) }
	if !domain.IsObjectID(orgID) || !domain.ValidTaskID(taskID) {
		notFound()
		return
	}
	now := s.clock()
	allowed := false
	if tok := r.URL.Query().Get("token"); tok != "" {
		if s.signer.Verify(tok, orgID, taskID, now) != nil {
			notFound()
			return
		}
		s.setReportCookie(w, orgID, taskID, now)
		q := r.URL.Query()
		q.Del("token")
		target := r.URL.Path
		if enc := q.Encode(); enc != "" {
			target += "?" + enc
		}
		http.Redirect(w, r, target, http.StatusSeeOther)
		return
	}
	if c, err := r.Cookie(reportCookie); err == nil && s.signer.Verify(c.Value, orgID, taskID, now) == nil {
		allowed = true
		s.setReportCookie(w, orgID, taskID, now) // slide: an open report keeps working while used
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
	report.Serve(w, r, s.reports, orgID, taskID, rel)
}

func (s *Server) setReportCookie(w http.ResponseWriter, orgID, taskID string, now time.Time) {
	http.SetCookie(w, &http.Cookie{Name: reportCookie, Value: s.signer.Sign(orgID, taskID, now),
		Path: reportBase(orgID, taskID), MaxAge: int(report.TokenTTL / time.Second), HttpOnly: true,
		Secure: strings.HasPrefix(s.publicURL, "https://"), SameSite: http.SameSiteLaxMode})
}
