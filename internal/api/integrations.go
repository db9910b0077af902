package api

import (
	"net/http"
	"reflect"
	"strconv"

	"verdict/internal/domain"
	"verdict/internal/integrations"
	"verdict/internal/integrations/tracker"
)

// The tracker routes: for each registered tracker (integrations.Trackers), GET and PUT
// /api/integrations/{provider} and POST at its ticket route, plus DELETE
// /api/integrations/{provider} for any integration provider. What a tracker's routes take and
// show is data its tracker.Spec declares (its settings, what it calls a ticket, the member of
// a run's view that lists its tickets), so the names the API published for each tracker stay
// as they were, and a new tracker brings its routes with it.

// errIntegrationsOff answers the integration routes of a server built without the trackers'
// service.
var errIntegrationsOff = domain.Unavailable("Integrations not configured", "Tracker integrations are not available on this server")

// trackerAPI is a tracker's JSON shapes, made once from its Spec: the PUT body (apiKey, or
// the member its Spec names, such as Jira's apiToken; its settings, enabled), the settings' view (enabled, configured, its settings, null when unset)
// and a ticket's view (<noun>Id, <noun>Url, identifier when it has one, title, createdBy,
// createdAt). Each is a struct type, so decode refuses unknown fields and wrong types as for
// every other body, and a view encodes its members in that order.
type trackerAPI struct {
	spec     tracker.Spec
	body     reflect.Type
	settings reflect.Type
	ticket   reflect.Type
}

// trackerAPIs are the registered trackers' shapes, in the registry's order.
var trackerAPIs = func() []*trackerAPI {
	var out []*trackerAPI
	for _, t := range integrations.Trackers() {
		out = append(out, newTrackerAPI(t))
	}
	return out
}()

var (
	stringPtr = reflect.TypeFor[*string]()
	boolPtr   = reflect.TypeFor[*bool]()
	stringT   = reflect.TypeFor[string]()
	boolT     = reflect.TypeFor[bool]()
)

// member is a field of a JSON shape: the i-th, named key in JSON.
func member(i int, key string, t reflect.Type) reflect.StructField {
	return reflect.StructField{Name: "F" + strconv.Itoa(i), Type: t, Tag: reflect.StructTag(`json:"` + key + `"`)}
}

func newTrackerAPI(t tracker.Spec) *trackerAPI {
	body := []reflect.StructField{member(0, t.KeyMember(), stringPtr)}
	settings := []reflect.StructField{member(0, "enabled", boolT), member(1, "configured", boolT)}
	for _, f := range t.Fields {
		body = append(body, member(len(body), f.Key, stringPtr))
		settings = append(settings, member(len(settings), f.Key, stringPtr))
	}
	body = append(body, member(len(body), "enabled", boolPtr))
	ticket := []reflect.StructField{member(0, t.TicketNoun+"Id", stringT), member(1, t.TicketNoun+"Url", stringT)}
	if t.Identifier {
		ticket = append(ticket, member(len(ticket), "identifier", stringT))
	}
	for _, k := range []string{"title", "createdBy", "createdAt"} {
		ticket = append(ticket, member(len(ticket), k, stringT))
	}
	return &trackerAPI{spec: t, body: reflect.StructOf(body), settings: reflect.StructOf(settings), ticket: reflect.StructOf(ticket)}
}

// settingsView is the view of an organization's settings of the tracker: never the key.
func (a *trackerAPI) settingsView(st *integrations.Settings) any {
	v := reflect.New(a.settings).Elem()
	v.Field(0).SetBool(st.Enabled)
	v.Field(1).SetBool(st.Configured)
	for i, f := range a.spec.Fields {
		v.Field(2 + i).Set(reflect.ValueOf(nullable(st.Values[f.Key])))
	}
	return v.Interface()
}

// ticketView is the view of a ticket created in the tracker.
func (a *trackerAPI) ticketView(t *domain.Ticket) any {
	v := reflect.New(a.ticket).Elem()
	values := []string{t.ExternalID, t.URL}
	if a.spec.Identifier {
		values = append(values, t.Identifier)
	}
	for i, s := range append(values, t.Title, t.CreatedBy, ts(t.CreatedAt)) {
		v.Field(i).SetString(s)
	}
	return v.Interface()
}

// input reads a decoded PUT body: 400 when a required setting is missing, whatever the
// caller's role, like the other organization settings.
func (a *trackerAPI) input(body reflect.Value) (integrations.Input, *domain.Error) {
	in := integrations.Input{APIKey: body.Field(0).Interface().(*string), Values: make(map[string]string, len(a.spec.Fields)),
		Enabled: body.Field(len(a.spec.Fields) + 1).Interface().(*bool)}
	for i, f := range a.spec.Fields {
		v := body.Field(1 + i).Interface().(*string)
		if v == nil {
			if f.Required {
				return in, domain.BadRequest("Missing required fields", f.Key+" is required")
			}
			continue
		}
		in.Values[f.Key] = *v
	}
	return in, nil
}

func (s *Server) trackerRoutes() {
	for _, a := range trackerAPIs {
		s.handle("GET /api/integrations/"+a.spec.Provider, routeOpts{access: bearerOrKey, limit: "api"}, s.getTracker(a))
		s.handle("PUT /api/integrations/"+a.spec.Provider, routeOpts{access: bearer, limit: "strict"}, s.putTracker(a))
	}
	s.handle("DELETE /api/integrations/{provider}", routeOpts{access: bearer, limit: "strict"}, s.deleteIntegration)
	for _, a := range trackerAPIs {
		s.handle("POST "+a.spec.TicketRoute, routeOpts{access: bearerOrKey, limit: "api"}, s.createTicket(a))
	}
}

func (s *Server) trackersOn(w http.ResponseWriter) bool {
	if s.trackers == nil {
		writeDomainError(w, errIntegrationsOff)
		return false
	}
	return true
}

// getTracker: GET /api/integrations/{provider} (linear, monday).
func (s *Server) getTracker(a *trackerAPI) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.trackersOn(w) {
			return
		}
		st, err := s.trackers.Settings(r.Context(), principalFrom(r), a.spec.Provider)
		if err != nil {
			s.fail(w, r, err, "Failed to fetch integration")
			return
		}
		ok(w, obj{"data": a.settingsView(st)})
	}
}

// putTracker: PUT /api/integrations/{provider} {apiKey?, the tracker's settings, enabled?}
// (linear: teamId; monday: boardId, groupId?; jira: {apiToken?, baseUrl, email, projectKey,
// issueType}).
func (s *Server) putTracker(a *trackerAPI) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.trackersOn(w) {
			return
		}
		body := reflect.New(a.body)
		if err := decode(w, r, body.Interface()); err != nil {
			writeDomainError(w, err)
			return
		}
		in, bad := a.input(body.Elem())
		if bad != nil {
			writeDomainError(w, bad)
			return
		}
		st, err := s.trackers.Save(r.Context(), principalFrom(r), a.spec.Provider, in)
		if err != nil {
			s.fail(w, r, err, "Failed to save integration")
			return
		}
		ok(w, obj{"message": a.spec.Name + " integration saved", "data": a.settingsView(st)})
	}
}

// deleteIntegration: DELETE /api/integrations/{provider} removes the stored credentials; 200
// whether or not there were any (removed says which).
func (s *Server) deleteIntegration(w http.ResponseWriter, r *http.Request) {
	if !s.trackersOn(w) {
		return
	}
	provider := r.PathValue("provider")
	removed, err := s.trackers.Remove(r.Context(), principalFrom(r), provider)
	if err != nil {
		s.fail(w, r, err, "Failed to remove integration")
		return
	}
	msg := "Integration " + provider + " removed"
	if !removed {
		msg = "Integration " + provider + " had no stored credentials"
	}
	ok(w, obj{"message": msg, "removed": removed})
}

// ticketBody is the body of every ticket route.
type ticketBody struct {
	TaskID      string `json:"taskId"`
	Title       string `json:"title"`
	Description string `json:"description"`
}

// createTicket: POST at the tracker's ticket route (/api/linear/issues, /api/monday/items)
// {taskId, title?, description?}.
func (s *Server) createTicket(a *trackerAPI) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.trackersOn(w) {
			return
		}
		var in ticketBody
		if err := decode(w, r, &in); err != nil {
			writeDomainError(w, err)
			return
		}
		c, err := s.trackers.CreateTicket(r.Context(), principalFrom(r), a.spec.Provider,
			integrations.TicketInput{TaskID: in.TaskID, Title: in.Title, Description: in.Description})
		if err != nil {
			s.fail(w, r, err, "Failed to create "+a.spec.TicketNoun)
			return
		}
		body := obj{"data": a.ticketView(&c.Ticket)}
		if c.Warning != "" {
			body["warning"] = c.Warning
		}
		created(w, body)
	}
}
