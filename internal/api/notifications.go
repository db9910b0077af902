package api

import (
	"net/http"

	"verdict/internal/domain"
	"verdict/internal/notify"
)

// Notifications: a project's receivers of its runs' events (Slack, Microsoft Teams, signed
// webhooks) under /api/projects/{id}/notifications, with their recent deliveries and a
// redelivery. Every member reads; admins create, delete and redeliver (the service decides).

var errNotificationsOff = domain.Unavailable("Notifications unavailable", "Notifications are not available on this server")

func (s *Server) notificationRoutes() {
	read := routeOpts{access: bearerOrKey, limit: "api"}
	write := routeOpts{access: bearerOrKey, limit: "strict"}
	s.handle("GET /api/projects/{id}/notifications", read, s.listNotifications)
	s.handle("POST /api/projects/{id}/notifications", write, s.createNotification)
	s.handle("DELETE /api/projects/{id}/notifications/{nid}", write, s.deleteNotification)
	s.handle("GET /api/projects/{id}/notifications/{nid}/deliveries", read, s.listDeliveries)
	s.handle("POST /api/projects/{id}/notifications/{nid}/deliveries/{did}/redeliver", write, s.redeliver)
}

func (s *Server) notificationsOn(w http.ResponseWriter) bool {
	if s.notifications == nil {
		writeDomainError(w, errNotificationsOff)
		return false
	}
	return true
}

func (s *Server) listNotifications(w http.ResponseWriter, r *http.Request) {
	if !s.notificationsOn(w) {
		return
	}
	list, err := s.notifications.List(r.Context(), principalFrom(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err, "Failed to list notifications")
		return
	}
	ok(w, obj{"data": obj{"notifications": list}})
}

func (s *Server) createNotification(w http.ResponseWriter, r *http.Request) {
	if !s.notificationsOn(w) {
		return
	}
	var in notify.Input
	if err := decode(w, r, &in); err != nil {
		writeDomainError(w, err)
		return
	}
	n, err := s.notifications.Create(r.Context(), principalFrom(r), r.PathValue("id"), in)
	if err != nil {
		s.fail(w, r, err, "Failed to create the notification")
		return
	}
	created(w, obj{"data": obj{"notification": n}})
}

func (s *Server) deleteNotification(w http.ResponseWriter, r *http.Request) {
	if !s.notificationsOn(w) {
		return
	}
	if err := s.notifications.Delete(r.Context(), principalFrom(r), r.PathValue("id"), r.PathValue("nid")); err != nil {
		s.fail(w, r, err, "Failed to delete the notification")
		return
	}
	ok(w, obj{"message": "Notification deleted"})
}

func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request) {
	if !s.notificationsOn(w) {
		return
	}
	list, err := s.notifications.Deliveries(r.Context(), principalFrom(r), r.PathValue("id"), r.PathValue("nid"))
	if err != nil {
		s.fail(w, r, err, "Failed to list deliveries")
		return
	}
	ok(w, obj{"data": obj{"deliveries": list}})
}

func (s *Server) redeliver(w http.ResponseWriter, r *http.Request) {
	if !s.notificationsOn(w) {
		return
	}
	d, err := s.notifications.Redeliver(r.Context(), principalFrom(r), r.PathValue("id"), r.PathValue("nid"), r.PathValue("did"))
	if err != nil {
		s.fail(w, r, err, "Failed to redeliver")
		return
	}
	writeJSON(w, http.StatusAccepted, obj{"success": true, "data": obj{"delivery": d}})
}
