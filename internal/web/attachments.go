package web

import (
	"net/http"
	"net/url"
	"strconv"

	"verdict/internal/domain"
	"verdict/internal/traceviewer"
)

// attachmentLink is an attachment of a test as its run's page lists it.
type attachmentLink struct {
	Name  string
	Href  string // GET /runs/{taskId}/attachments/{test}/{n}
	Trace bool   // a Playwright trace: opens in the trace viewer
	Retry int
}

// attachmentLinks are the links of the attachments of e's test i (none once the run's report
// files are deleted, or without report links).
func (s *Server) attachmentLinks(e *domain.Execution, i int) []attachmentLink {
	t := &e.Tests[i]
	if len(t.Attachments) == 0 || e.FilesExpiredAt != nil || s.reportFile == nil {
		return nil
	}
	out := make([]attachmentLink, len(t.Attachments))
	for j := range t.Attachments {
		a := &t.Attachments[j]
		out[j] = attachmentLink{Name: a.Name, Trace: a.IsTrace(), Retry: a.Retry,
			Href: "/runs/" + url.PathEscape(e.TaskID) + "/attachments/" + strconv.Itoa(i) + "/" + strconv.Itoa(j)}
	}
	return out
}

// openAttachment opens attachment n of the run's test (by their places in the run's kept
// tests) for the signed-in member: a 303 to the file through a report link made now, with the
// run's reports' access rules, or, for a Playwright trace, to the trace viewer opening it. The
// link is made at the click, so a page left open never hands out a stale one.
func (s *Server) openAttachment(w http.ResponseWriter, r *http.Request) {
	st := stateOf(r)
	e, err := s.executions.Get(r.Context(), st.p, r.PathValue("taskId"))
	if err != nil {
		s.failRun(w, r, err)
		return
	}
	i, err1 := strconv.Atoi(r.PathValue("test"))
	j, err2 := strconv.Atoi(r.PathValue("n"))
	if err1 != nil || err2 != nil || i < 0 || i >= len(e.Tests) || j < 0 || j >= len(e.Tests[i].Attachments) || s.reportFile == nil {
		s.errorPage(w, r, http.StatusNotFound, "Attachment not found", "This run's test has no such attachment.")
		return
	}
	if e.FilesExpiredAt != nil {
		s.errorPage(w, r, http.StatusGone, "Report expired", "The report files of run "+e.TaskID+
			" were deleted under the organization's retention policy; the run, its results and its notes remain.")
		return
	}
	t, a := &e.Tests[i], &e.Tests[i].Attachments[j]
	holder := e
	if t.Shard > 0 { // in the reports of the shard's container
		holder = nil
		for k := range e.Parts {
			if p := &e.Parts[k]; p.ShardIndex == t.Shard && p.Retry == 0 {
				holder = p
			}
		}
		if holder == nil {
			s.errorPage(w, r, http.StatusNotFound, "Attachment not found", "The shard that ran this test is gone.")
			return
		}
	}
	target := s.reportFile(st.p, holder, a.Path)
	if a.IsTrace() {
		origin := "" // the viewer is on the origin of the report link
		if u, err := url.Parse(target); err == nil && u.Host != "" {
			origin = u.Scheme + "://" + u.Host
		}
		target = traceviewer.URL(origin, target)
	}
	// The target holds a report link: not kept, not sent on.
	w.Header().Set("Cache-Control", "private, no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, target, http.StatusSeeOther)
}
