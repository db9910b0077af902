package web

import (
	"net/http"
	"net/url"

	"verdict/internal/notify"
)

// A project's notifications on the dashboard (/projects/{id}/notifications): every member sees
// the receivers (their hosts only) and each one's recent deliveries; admins add one (a webhook's
// signing secret is shown once, in the answer to the POST), delete one and redeliver a delivery.
// The actions take from the buckets of their API twins (strict).

// notificationsData is the notifications page.
type notificationsData struct {
	ProjectID, ProjectName string
	Admin                  bool
	Notifications          []notificationRow
	// NewSecret is the signing secret of the webhook just created, shown this once.
	NewSecret, NewHost string
	Error              *formError
	Form               notify.Input // the refused form, filled in again (never its secret)
	Kinds, Rules       []string
}

type notificationRow struct {
	notify.View
	Deliveries []notify.DeliveryView
}

func notificationsPath(projectID string) string { return projectPath(projectID) + "/notifications" }

func (s *Server) notificationsPage(w http.ResponseWriter, r *http.Request, status int, d notificationsData) {
	if s.notify == nil {
		s.errorPage(w, r, http.StatusNotFound, "Page not found", "There is no page at this address.")
		return
	}
	p := stateOf(r).p
	id := r.PathValue("id")
	pr, err := s.executions.GetProject(r.Context(), p, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	list, err := s.notify.List(r.Context(), p, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d.ProjectID, d.ProjectName, d.Admin = pr.ID, pr.Name, p.IsAdmin()
	d.Kinds = []string{"slack", "teams", "webhook"}
	d.Rules = []string{"failure", "gate_failed", "recovery", "always"}
	for _, n := range list {
		ds, err := s.notify.Deliveries(r.Context(), p, id, n.ID)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if len(ds) > 20 {
			ds = ds[:20] // the page shows the newest; the API lists all that are kept
		}
		d.Notifications = append(d.Notifications, notificationRow{View: n, Deliveries: ds})
	}
	s.render(w, r, status, "notifications", "Notifications of "+pr.Name, d)
}

func (s *Server) notificationsList(w http.ResponseWriter, r *http.Request) {
	s.notificationsPage(w, r, http.StatusOK, notificationsData{})
}

func (s *Server) createNotification(w http.ResponseWriter, r *http.Request) {
	if s.notify == nil {
		s.errorPage(w, r, http.StatusNotFound, "Page not found", "There is no page at this address.")
		return
	}
	in := notify.Input{Kind: r.PostFormValue("kind"), URL: r.PostFormValue("url"), On: r.PostForm["on"],
		Secret: r.PostFormValue("secret")}
	c, err := s.notify.Create(r.Context(), stateOf(r).p, r.PathValue("id"), in)
	if err != nil {
		fe := s.formErrorOf(r, err)
		if fe.Status == http.StatusNotFound || fe.Status == http.StatusForbidden {
			s.fail(w, r, err)
			return
		}
		in.Secret = ""
		s.notificationsPage(w, r, fe.Status, notificationsData{Error: fe, Form: in})
		return
	}
	// The answer is the page with the secret, never a redirect, a cookie or a URL carrying it.
	s.notificationsPage(w, r, http.StatusCreated, notificationsData{NewSecret: c.Secret, NewHost: c.Host})
}

func (s *Server) deleteNotification(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if s.notify == nil {
		s.errorPage(w, r, http.StatusNotFound, "Page not found", "There is no page at this address.")
		return
	}
	if err := s.notify.Delete(r.Context(), stateOf(r).p, id, r.PathValue("nid")); err != nil {
		s.refused(w, r, notificationsPath(id), err)
		return
	}
	s.done(w, r, notificationsPath(id), "Notification deleted.")
}

func (s *Server) redeliverNotification(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if s.notify == nil {
		s.errorPage(w, r, http.StatusNotFound, "Page not found", "There is no page at this address.")
		return
	}
	d, err := s.notify.Redeliver(r.Context(), stateOf(r).p, id, r.PathValue("nid"), r.PathValue("did"))
	if err != nil {
		s.refused(w, r, notificationsPath(id), err)
		return
	}
	s.done(w, r, notificationsPath(id)+"#n-"+url.PathEscape(r.PathValue("nid")), "Delivery of "+d.Event+" queued again.")
}
