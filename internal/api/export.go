package api

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"net/http"
	"time"

	"verdict/internal/domain"
)

// exportSink writes an organization's export as a .tar.gz of JSON documents, each encoded and
// written as it comes (one run at a time), in the API's own views: what members may read,
// never a password hash or a secret's value.
type exportSink struct {
	s       *Server
	w       http.ResponseWriter
	tw      *tar.Writer
	gz      *gzip.Writer
	now     time.Time
	started bool
	slug    string
}

func (x *exportSink) start() {
	if x.started {
		return
	}
	x.started = true
	h := x.w.Header()
	h.Set("Content-Type", "application/gzip")
	h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s-export.tar.gz"`, x.slug))
	h.Set("Cache-Control", "no-store")
	x.w.WriteHeader(http.StatusOK)
	x.gz = gzip.NewWriter(x.w)
	x.tw = tar.NewWriter(x.gz)
}

func (x *exportSink) file(name string, v any) error {
	x.start()
	body, err := MarshalView(v)
	if err != nil {
		return err
	}
	if err := x.tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: x.now,
		Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	_, err = x.tw.Write(body)
	return err
}

func (x *exportSink) Organization(o *domain.Organization) error {
	x.slug = o.Slug
	return x.file("organization.json", obj{"id": o.ID, "name": o.Name, "slug": o.Slug, "plan": o.Plan,
		"aiAnalysisEnabled": o.AIAnalysisEnabled, "features": o.Features, "allowedImages": nonNil(o.AllowedImages),
		"createdAt": ts(o.CreatedAt), "exportedAt": ts(x.now)})
}

func (x *exportSink) Members(users []domain.User) error {
	views := make([]User, len(users))
	for i := range users {
		views[i] = userView(&users[i])
	}
	return x.file("members.json", views)
}

func (x *exportSink) Projects(projects []domain.Project) error {
	views := make([]Project, len(projects))
	for i := range projects {
		views[i] = projectView(&projects[i])
	}
	return x.file("projects.json", views)
}

func (x *exportSink) Run(e *domain.Execution) error {
	return x.file("runs/"+e.TaskID+".json", x.s.views.Execution(e, x.now))
}

func (x *exportSink) TestCases(page int, cases []domain.TestCase) error {
	views := make([]TestCase, len(cases))
	for i := range cases {
		views[i] = testCaseView(&cases[i])
	}
	return x.file(fmt.Sprintf("test-cases/%04d.json", page), views)
}

func (x *exportSink) Plans(plans []domain.AutomationPlan) error {
	views := make([]Plan, len(plans))
	for i := range plans {
		views[i] = planView(&plans[i])
	}
	return x.file("automation-plans.json", views)
}

func (x *exportSink) Audit(page int, entries []domain.AuditEntry) error {
	views := make([]auditEntryView, len(entries))
	for i := range entries {
		views[i] = auditEntryView{AuditRecord: identityRecord(&entries[i]), CreatedAt: ts(entries[i].CreatedAt)}
	}
	return x.file(fmt.Sprintf("audit/%04d.json", page), views)
}

// exportOrganization streams the organization's data as a .tar.gz (admins). A failure after the
// download started cuts the connection, so a complete-looking archive is complete.
func (s *Server) exportOrganization(w http.ResponseWriter, r *http.Request) {
	if s.custody == nil {
		writeDomainError(w, domain.Unavailable("Export unavailable", "Exports are not available on this server"))
		return
	}
	x := &exportSink{s: s, w: w, now: s.clock()}
	err := s.custody.Export(r.Context(), principalFrom(r), x)
	if err == nil && x.started {
		if err = x.tw.Close(); err == nil {
			err = x.gz.Close()
		}
	}
	switch {
	case err != nil && !x.started:
		s.fail(w, r, err, "Failed to export the organization")
	case err != nil:
		panic(http.ErrAbortHandler)
	}
}
