package web

import (
	"net/http"
	"strconv"
	"strings"

	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/store"
)

// The billing page (/settings/billing): the plan, usage, checkout, customer portal and payment
// history. Every form is for admins; the billing service refuses anyone else anyway.

// eventsListed is the length of the payment history on /settings/billing.
const eventsListed = 50

type billingData struct {
	Org   *domain.Organization
	Usage *identity.Usage
	// Bars are the usage table's rows, each with its alert band.
	Bars []usageBar
	// Checkout is the payment provider's return ("success" or "canceled"), "" for none.
	Checkout string
	Admin    bool
	// Configured: payments are set up on this server (the buttons are shown to admins).
	Configured bool
	// Upgrades are the paid plans an admin may check out (none while a subscription runs);
	// Portal: the organization has a billing account to manage.
	Upgrades []domain.Plan
	Portal   bool
	// Events is the payment history (admins, when payments are set up); EventsError says it
	// could not be read.
	Events      []store.BillingEvent
	EventsError string
}

func (s *Server) billingPage(w http.ResponseWriter, r *http.Request) {
	st := stateOf(r)
	u, err := s.identity.Usage(r.Context(), st.p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d := billingData{Org: st.org, Usage: u, Bars: usageBars(u), Admin: st.p.IsAdmin(), Configured: s.billing != nil && s.billing.Configured()}
	if c := r.URL.Query().Get("checkout"); c == "success" || c == "canceled" {
		d.Checkout = c
	}
	if o := st.org; o != nil {
		if b := o.Billing; b.ProviderSubscriptionID == nil || b.Status == domain.BillingCanceled {
			for _, p := range []domain.Plan{domain.PlanTeam, domain.PlanEnterprise} {
				if p != o.Plan {
					d.Upgrades = append(d.Upgrades, p)
				}
			}
		}
		d.Portal = o.Billing.ProviderCustomerID != ""
	}
	if d.Admin && d.Configured {
		if d.Events, err = s.billing.Events(r.Context(), st.p, eventsListed); err != nil {
			s.log.Warn("reading the payment history for /settings/billing", "err", err)
			d.EventsError = "The payment history could not be read."
		}
	}
	s.render(w, r, http.StatusOK, "billing", "Billing", d)
}

// usageBar is one resource's use of its plan limit: a meter, and the alert band it is in
// ("" below 50 %, then info, warning at 80 % and critical at 100 %, as the usage alerts).
type usageBar struct {
	Name, Used, Limit string
	Value, Max        int64 // Max 0: unlimited, no meter
	Low, High         int64 // the meter's bands: 50 % and 80 % of Max
	Percent           int
	Band              domain.AlertType
}

func usageBars(u *identity.Usage) []usageBar {
	count := func(n int64) string { return strconv.FormatInt(n, 10) }
	bytes := func(n int64) string { return formatBytes(n) }
	rows := []struct {
		name, resource string
		used, limit    int64
		format         func(int64) string
	}{
		{"Test runs", "testRuns", int64(u.RunsUsed), int64(u.Limits.MaxTestRuns), count},
		{"Members", "users", int64(u.ActiveUsers), int64(u.Limits.MaxUsers), count},
		{"Projects", "projects", int64(u.Projects), int64(u.Limits.MaxProjects), count},
		{"Report storage", "storage", u.StorageUsed, u.Limits.MaxStorageBytes, bytes},
	}
	out := make([]usageBar, 0, len(rows))
	for _, r := range rows {
		b := usageBar{Name: r.name, Used: r.format(r.used), Limit: "unlimited", Value: r.used}
		if r.limit > 0 {
			b.Limit, b.Max, b.Percent = r.format(r.limit), r.limit, domain.PercentUsed(r.used, r.limit)
			b.Value, b.Low, b.High = min(r.used, r.limit), r.limit/2, r.limit*4/5
			if a := domain.AlertFor(r.resource, r.used, r.limit); a != nil {
				b.Band = a.Type
			}
		}
		out = append(out, b)
	}
	return out
}

// The checkout and portal forms send the browser to the payment provider's pages. The forms
// are submitted by htmx, which follows HX-Redirect by navigating: the page's CSP allows forms
// to post to this site only (form-action 'self'), and browsers apply that to a form's
// redirects too, so a plain 303 to the provider would be blocked. Without htmx the answer is
// that 303.

func (s *Server) checkout(w http.ResponseWriter, r *http.Request) {
	if s.billing == nil {
		s.refused(w, r, billingPath, domain.Unavailable("Billing not configured", "Payments are not set up on this server"))
		return
	}
	c, err := s.billing.StartCheckout(r.Context(), stateOf(r).p, "", strings.TrimSpace(r.PostFormValue("plan")))
	if err != nil {
		s.refused(w, r, billingPath, err)
		return
	}
	redirect(w, r, c.URL)
}

func (s *Server) portal(w http.ResponseWriter, r *http.Request) {
	if s.billing == nil {
		s.refused(w, r, billingPath, domain.Unavailable("Billing not configured", "Payments are not set up on this server"))
		return
	}
	url, err := s.billing.OpenPortal(r.Context(), stateOf(r).p)
	if err != nil {
		s.refused(w, r, billingPath, err)
		return
	}
	redirect(w, r, url)
}
