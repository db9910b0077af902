package web

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"verdict/internal/domain"
	"verdict/internal/httpkind"
	"verdict/internal/integrations"
)

// Rendering: the templates (found by glob), the layout every page is rendered in, error pages
// and form refusals.

//go:embed templates
var templateFS embed.FS

// parsePages parses every page: each templates/<name>.html is the page <name>, rendered inside
// the layout with the shared parts, all of templates/partials/*.html. A new page is its
// template file (defining "content"; and "live" when the page loads live.js), its handler and
// its route.
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
	base := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/partials/*.html"))
	files, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err)
	}
	out := make(map[string]*template.Template, len(files))
	for _, f := range files {
		name := strings.TrimSuffix(path.Base(f), ".html")
		out[name] = template.Must(template.Must(base.Clone()).ParseFS(templateFS, f))
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
	buf := pageBuffers.Get().(*bytes.Buffer)
	defer putPageBuffer(buf)
	err := s.pages[name].ExecuteTemplate(buf, "layout", page{Title: title, User: st.user, Org: st.org,
		CSRF: st.csrf, Nav: name, CanWrite: st.p != nil && st.p.CanWrite(), Flash: st.flash,
		Live: s.tickets != nil && s.pages[name].Lookup("live") != nil, Data: data})
	if err != nil {
		s.log.Error("rendering a page", "page", name, "err", err)
		http.Error(w, "Internal server error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// pageBuffers hold pages while they render (a page is written whole, or not at all, when its
// template fails): reused, a page costs no buffer growth, the runs list's 200 KB allocated
// afresh at each request.
var pageBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func putPageBuffer(b *bytes.Buffer) {
	if b.Cap() > 1<<20 {
		return // a rare big page: let it go rather than keep a megabyte per pooled buffer
	}
	b.Reset()
	pageBuffers.Put(b)
}

// renderPart answers one template of a page (part), for a script to swap into the page.
func (s *Server) renderPart(w http.ResponseWriter, r *http.Request, name, part string, data any) {
	st := stateOf(r)
	buf := pageBuffers.Get().(*bytes.Buffer)
	defer putPageBuffer(buf)
	err := s.pages[name].ExecuteTemplate(buf, part, page{User: st.user, Org: st.org, CSRF: st.csrf, Nav: name,
		CanWrite: st.p != nil && st.p.CanWrite(), Data: data})
	if err != nil {
		s.log.Error("rendering a part of a page", "page", name, "part", part, "err", err)
		http.Error(w, "Internal server error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
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
