package mail

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"net/url"
	"strings"
	texttemplate "text/template"
	"time"

	"verdict/internal/domain"
)

// Paths in the web dashboard that e-mails link to, relative to the public base URL.
const (
	AcceptInvitationPath = "accept-invitation" // ?token=<64 hex>
	DashboardPath        = ""                  // the dashboard is served at the root
	BillingPath          = "settings/billing"  // plan, payment method, usage
)

//go:embed templates
var templateFS embed.FS

// kind names one e-mail; its templates are templates/<kind>.html and templates/<kind>.txt,
// each rendered inside the shared layout.
type kind string

const (
	kindInvitation           kind = "invitation"
	kindWelcome              kind = "welcome"
	kindPaymentSucceeded     kind = "payment_succeeded"
	kindPaymentFailed        kind = "payment_failed"
	kindUsageAlert           kind = "usage_alert"
	kindSubscriptionCanceled kind = "subscription_canceled"
)

var kinds = []kind{kindInvitation, kindWelcome, kindPaymentSucceeded, kindPaymentFailed,
	kindUsageAlert, kindSubscriptionCanceled}

// Parsed once at start: the templates are embedded, so a broken one is a programming error.
var (
	htmlTemplates = map[kind]*htmltemplate.Template{}
	textTemplates = map[kind]*texttemplate.Template{}
)

func init() {
	for _, k := range kinds {
		htmlTemplates[k] = htmltemplate.Must(htmltemplate.New("layout.html").Option("missingkey=error").
			ParseFS(templateFS, "templates/layout.html", "templates/"+string(k)+".html"))
		textTemplates[k] = texttemplate.Must(texttemplate.New("layout.txt").Option("missingkey=error").
			ParseFS(templateFS, "templates/layout.txt", "templates/"+string(k)+".txt"))
	}
}

// Content is a rendered e-mail without recipients.
type Content struct {
	Subject string
	HTML    string
	Text    string
}

// Message addresses the content to recipients.
func (c Content) Message(to ...string) Message {
	return Message{To: to, Subject: c.Subject, HTML: c.HTML, Text: c.Text}
}

// Renderer renders the e-mails; links point into Verdict at its public base URL.
type Renderer struct {
	base *url.URL
}

// NewRenderer returns a renderer for the public base URL, e.g. "https://verdict.example.com"
// (a path prefix is kept).
func NewRenderer(publicURL string) (*Renderer, error) {
	u, err := url.Parse(publicURL)
	if err != nil {
		return nil, fmt.Errorf("mail: public URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("mail: public URL %q must be an absolute http(s) URL", publicURL)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("mail: public URL %q must not carry a query, fragment or user", publicURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return &Renderer{base: u}, nil
}

// link returns the absolute URL of a dashboard path with an optional query.
func (r *Renderer) link(path string, query url.Values) string {
	u := *r.base
	u.Path = r.base.Path + "/" + path
	u.RawQuery = query.Encode()
	return u.String()
}

// layout is what the shared layout reads; Body is the kind-specific view.
type layout struct {
	Subject string
	Link    string // the e-mail's call to action, repeated in the footer for clients that hide buttons
	Body    any
}

func (r *Renderer) render(k kind, subject, link string, body any) (Content, error) {
	subject = oneLine(subject)
	data := layout{Subject: subject, Link: link, Body: body}
	var h, t bytes.Buffer
	if err := htmlTemplates[k].Execute(&h, data); err != nil {
		return Content{}, fmt.Errorf("mail: render %s (html): %w", k, err)
	}
	if err := textTemplates[k].Execute(&t, data); err != nil {
		return Content{}, fmt.Errorf("mail: render %s (text): %w", k, err)
	}
	return Content{Subject: subject, HTML: h.String(), Text: t.String()}, nil
}

// oneLine keeps user-chosen names (organization, inviter) from breaking the Subject header.
func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return r == '\r' || r == '\n' || r == '\t' || r == ' '
	}), " ")
}

// formatDate is how dates read in e-mails: unambiguous across locales, always UTC.
func formatDate(t time.Time) string { return t.UTC().Format("January 2, 2006 at 15:04 UTC") }

func formatDay(t time.Time) string { return t.UTC().Format("January 2, 2006") }

func roleName(r domain.Role) string {
	switch r {
	case domain.RoleAdmin:
		return "Admin"
	case domain.RoleDeveloper:
		return "Developer"
	case domain.RoleViewer:
		return "Viewer"
	}
	return string(r)
}

func planName(p domain.Plan) string {
	switch p {
	case domain.PlanFree:
		return "Free"
	case domain.PlanTeam:
		return "Team"
	case domain.PlanEnterprise:
		return "Enterprise"
	}
	return string(p)
}

// InvitationData fills the invitation e-mail.
type InvitationData struct {
	OrganizationName string
	InviterName      string
	Role             domain.Role
	Token            string // the raw 64-hex token; only its hash is stored
	ExpiresAt        time.Time
}

// Invitation renders the e-mail sent to an invitee.
func (r *Renderer) Invitation(d InvitationData) (Content, error) {
	if len(d.Token) != 64 || !domain.IsHex(d.Token) {
		return Content{}, errors.New("mail: invitation token must be 64 hex characters")
	}
	if !d.Role.Valid() {
		return Content{}, fmt.Errorf("mail: invalid role %q", d.Role)
	}
	link := r.link(AcceptInvitationPath, url.Values{"token": {d.Token}})
	view := struct {
		InvitationData
		RoleName, Expires string
	}{d, roleName(d.Role), formatDate(d.ExpiresAt)}
	subject := fmt.Sprintf("%s invited you to join %s on Verdict", d.InviterName, d.OrganizationName)
	return r.render(kindInvitation, subject, link, view)
}

// WelcomeData fills the welcome e-mail.
type WelcomeData struct {
	UserName         string
	OrganizationName string
}

// Welcome renders the e-mail sent after signup or after accepting an invitation.
func (r *Renderer) Welcome(d WelcomeData) (Content, error) {
	subject := fmt.Sprintf("Welcome to %s on Verdict", d.OrganizationName)
	return r.render(kindWelcome, subject, r.link(DashboardPath, nil), d)
}

// PaymentSucceededData fills the payment receipt sent to admins.
type PaymentSucceededData struct {
	OrganizationName string
	AmountMinor      int64  // in the currency's minor unit, as the payment provider reports it
	Currency         string // ISO 4217, any case
	PaidAt           time.Time
}

// PaymentSucceeded renders the e-mail for a successful payment.
func (r *Renderer) PaymentSucceeded(d PaymentSucceededData) (Content, error) {
	view := struct {
		PaymentSucceededData
		Amount, Date string
	}{d, FormatMoney(d.AmountMinor, d.Currency), formatDay(d.PaidAt)}
	subject := fmt.Sprintf("Payment of %s received for %s", view.Amount, d.OrganizationName)
	return r.render(kindPaymentSucceeded, subject, r.link(BillingPath, nil), view)
}

// PaymentFailedData fills the warning sent to admins when a payment fails.
type PaymentFailedData struct {
	OrganizationName string
	AmountMinor      int64
	Currency         string
}

// PaymentFailed renders the e-mail for a failed payment; its link is the billing page where
// the payment method is updated.
func (r *Renderer) PaymentFailed(d PaymentFailedData) (Content, error) {
	view := struct {
		PaymentFailedData
		Amount string
	}{d, FormatMoney(d.AmountMinor, d.Currency)}
	subject := fmt.Sprintf("Action needed: payment of %s for %s failed", view.Amount, d.OrganizationName)
	return r.render(kindPaymentFailed, subject, r.link(BillingPath, nil), view)
}

// UsageAlertData fills the alert sent to admins when usage crosses a threshold.
type UsageAlertData struct {
	OrganizationName string
	Resource         string // as shown to people, e.g. "test runs", "storage"
	Percent          int    // the threshold reached: 50, 80, 90 or 100
	Used, Limit      int64
	Bytes            bool // Used and Limit are byte counts, shown as sizes
	Plan             domain.Plan
	Note             string // what was refused for passing the limit, if anything
}

// UsageAlert renders the usage-alert e-mail.
func (r *Renderer) UsageAlert(d UsageAlertData) (Content, error) {
	used, limit := formatCount(d.Used, d.Bytes), formatCount(d.Limit, d.Bytes)
	view := struct {
		UsageAlertData
		UsedText, LimitText, PlanName string
		Reached                       bool
	}{d, used, limit, planName(d.Plan), d.Percent >= 100}
	subject := fmt.Sprintf("%s has used %d%% of its %s limit", d.OrganizationName, d.Percent, d.Resource)
	return r.render(kindUsageAlert, subject, r.link(BillingPath, nil), view)
}

// SubscriptionCanceledData fills the e-mail sent to admins when the subscription ends.
type SubscriptionCanceledData struct {
	OrganizationName string
	PreviousPlan     domain.Plan
}

// SubscriptionCanceled renders the cancellation e-mail: the plan is now free, with its limits.
func (r *Renderer) SubscriptionCanceled(d SubscriptionCanceledData) (Content, error) {
	l := domain.LimitsFor(domain.PlanFree)
	view := struct {
		SubscriptionCanceledData
		PreviousPlanName, PlanName                         string
		Users, TestRuns, Projects, ConcurrentRuns, Storage string
	}{d, planName(d.PreviousPlan), planName(domain.PlanFree),
		formatCount(int64(l.MaxUsers), false), formatCount(int64(l.MaxTestRuns), false),
		formatCount(int64(l.MaxProjects), false), formatCount(int64(l.MaxConcurrentRuns), false),
		formatCount(l.MaxStorageBytes, true)}
	subject := fmt.Sprintf("Your Verdict subscription for %s was canceled", d.OrganizationName)
	return r.render(kindSubscriptionCanceled, subject, r.link(BillingPath, nil), view)
}
