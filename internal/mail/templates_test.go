package mail

import (
	"strings"
	"testing"
	"time"
)

func renderer(t *testing.T) *Renderer {
	t.Helper()
	r, err := NewRenderer("https://verdict.example.com/app/")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// every kind of e-mail, rendered with ordinary data, with the link and phrases each must carry.
func renderAll(t *testing.T) map[string]struct {
	c    Content
	want []string
} {
	t.Helper()
	r := renderer(t)
	type tc = struct {
		c    Content
		want []string
	}
	out := map[string]tc{}
	add := func(name string, c Content, err error, want ...string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = tc{c, want}
	}
	token := strings.Repeat("ab", 32)
	c, err := r.Invitation(InvitationData{OrganizationName: "Acme", InviterName: "Ada Admin", Role: "viewer",
		Token: token, ExpiresAt: time.Date(2026, 1, 9, 15, 4, 0, 0, time.FixedZone("CET", 3600))})
	add("invitation", c, err, "https://verdict.example.com/app/accept-invitation?token="+token,
		"Ada Admin", "Acme", "Viewer", "January 9, 2026 at 14:04 UTC")
	c, err = r.Welcome(WelcomeData{UserName: "Grace", OrganizationName: "Acme"})
	add("welcome", c, err, "https://verdict.example.com/app/", "Grace", "Acme")
	c, err = r.PaymentSucceeded(PaymentSucceededData{OrganizationName: "Acme", AmountMinor: 9900, Currency: "usd",
		PaidAt: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)})
	add("payment succeeded", c, err, "https://verdict.example.com/app/settings/billing", "99.00 USD", "February 1, 2026", "Acme")
	c, err = r.PaymentFailed(PaymentFailedData{OrganizationName: "Acme", AmountMinor: 49900, Currency: "usd"})
	add("payment failed", c, err, "https://verdict.example.com/app/settings/billing", "499.00 USD", "update your payment method")
	c, err = r.UsageAlert(UsageAlertData{OrganizationName: "Acme", Resource: "test runs", Percent: 80, Used: 800, Limit: 1000, Plan: "team"})
	add("usage alert", c, err, "https://verdict.example.com/app/settings/billing", "80%", "test runs", "800 of 1,000", "Team")
	c, err = r.SubscriptionCanceled(SubscriptionCanceledData{OrganizationName: "Acme", PreviousPlan: "enterprise"})
	add("subscription canceled", c, err, "https://verdict.example.com/app/settings/billing", "Enterprise", "Free",
		"Users: 3", "Test runs per month: 100", "Storage: 1 GiB")
	return out
}

func TestEveryEmailHasBothPartsWithLinkAndNoUnsubscribe(t *testing.T) {
	for name, tc := range renderAll(t) {
		if tc.c.Subject == "" || strings.ContainsAny(tc.c.Subject, "\r\n") {
			t.Errorf("%s: subject %q", name, tc.c.Subject)
		}
		if !strings.HasPrefix(tc.c.HTML, "<!DOCTYPE html>") {
			t.Errorf("%s: HTML part is not a document", name)
		}
		if strings.Contains(tc.c.Text, "<") {
			t.Errorf("%s: text part contains markup:\n%s", name, tc.c.Text)
		}
		link := tc.want[0]
		if !strings.Contains(tc.c.HTML, `href="`+link+`"`) {
			t.Errorf("%s: HTML part lacks a link to %s", name, link)
		}
		for _, w := range tc.want {
			if !strings.Contains(tc.c.Text, w) {
				t.Errorf("%s: text part lacks %q:\n%s", name, w, tc.c.Text)
			}
			if !strings.Contains(tc.c.HTML, w) && !strings.Contains(tc.c.HTML, strings.ReplaceAll(w, "&", "&amp;")) {
				t.Errorf("%s: HTML part lacks %q", name, w)
			}
		}
		for _, part := range []string{tc.c.HTML, tc.c.Text} {
			if strings.Contains(strings.ToLower(part), "unsubscribe") {
				t.Errorf("%s: has an unsubscribe link", name)
			}
		}
		if err := tc.c.Message("admin@example.com").Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestUserChosenNamesAreEscapedInHTMLAndKeptOffSubjectLines(t *testing.T) {
	r := renderer(t)
	c, err := r.Invitation(InvitationData{OrganizationName: `<script>alert(1)</script>`, InviterName: "Eve\r\nBcc: victim@example.com",
		Role: "admin", Token: strings.Repeat("0", 64), ExpiresAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(c.HTML, "<script>") || !strings.Contains(c.HTML, "&lt;script&gt;") {
		t.Errorf("organization name not escaped in HTML")
	}
	if strings.ContainsAny(c.Subject, "\r\n") || !strings.Contains(c.Subject, "Eve Bcc: victim@example.com") {
		t.Errorf("subject = %q", c.Subject)
	}
}

func TestInvitationRejectsMalformedTokenAndRole(t *testing.T) {
	r := renderer(t)
	for _, d := range []InvitationData{
		{Role: "admin", Token: "short"},
		{Role: "admin", Token: strings.Repeat("g", 64)},
		{Role: "owner", Token: strings.Repeat("a", 64)},
	} {
		if _, err := r.Invitation(d); err == nil {
			t.Errorf("accepted %+v", d)
		}
	}
}

func TestUsageAlertAtTheLimitSaysSo(t *testing.T) {
	r := renderer(t)
	c, err := r.UsageAlert(UsageAlertData{OrganizationName: "Acme", Resource: "storage", Percent: 100,
		Used: 3 << 29, Limit: 1 << 30, Bytes: true, Plan: "free"})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"100%", "1.5 GiB of 1 GiB", "limit is reached", "Free plan"} {
		if !strings.Contains(c.Text, w) {
			t.Errorf("text lacks %q:\n%s", w, c.Text)
		}
	}
}

func TestNewRendererValidatesPublicURL(t *testing.T) {
	for _, u := range []string{"", "verdict.example.com", "ftp://verdict.example.com", "https://", "https://x.example/?a=b", "https://u:p@x.example"} {
		if _, err := NewRenderer(u); err == nil {
			t.Errorf("NewRenderer(%q) accepted", u)
		}
	}
	r, err := NewRenderer("http://localhost:3000")
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.Welcome(WelcomeData{OrganizationName: "Acme"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(c.Text, "http://localhost:3000/\n") || !strings.Contains(c.Text, "Hello,") {
		t.Errorf("welcome without a user name:\n%s", c.Text)
	}
}

func TestFormatMoney(t *testing.T) {
	for _, tc := range []struct {
		minor int64
		cur   string
		want  string
	}{
		{9900, "usd", "99.00 USD"},
		{5, "eur", "0.05 EUR"},
		{123456789, "USD", "1,234,567.89 USD"},
		{500, "jpy", "500 JPY"},
		{1500, "kwd", "1.500 KWD"},
		{-250, "usd", "-2.50 USD"},
	} {
		if got := FormatMoney(tc.minor, tc.cur); got != tc.want {
			t.Errorf("FormatMoney(%d, %q) = %q, want %q", tc.minor, tc.cur, got, tc.want)
		}
	}
}

func TestFormatCount(t *testing.T) {
	for _, tc := range []struct {
		n     int64
		bytes bool
		want  string
	}{
		{-1, false, "unlimited"}, {-1, true, "unlimited"}, {0, false, "0"}, {999, false, "999"},
		{1000, false, "1,000"}, {1234567, false, "1,234,567"},
		{512, true, "512 B"}, {1536, true, "1.5 KiB"}, {10 << 30, true, "10 GiB"}, {524288000, true, "500 MiB"},
	} {
		if got := formatCount(tc.n, tc.bytes); got != tc.want {
			t.Errorf("formatCount(%d, %v) = %q, want %q", tc.n, tc.bytes, got, tc.want)
		}
	}
}

func TestMessageValidate(t *testing.T) {
	ok := Message{To: []string{"a@example.com"}, Subject: "s", HTML: "<p>h</p>", Text: "t"}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, m := range map[string]Message{
		"no recipient":  {Subject: "s", HTML: "h", Text: "t"},
		"bad recipient": {To: []string{"nope"}, Subject: "s", HTML: "h", Text: "t"},
		"no subject":    {To: ok.To, HTML: "h", Text: "t"},
		"broken subj":   {To: ok.To, Subject: "a\r\nBcc: x@example.com", HTML: "h", Text: "t"},
		"no html":       {To: ok.To, Subject: "s", Text: "t"},
		"no text":       {To: ok.To, Subject: "s", HTML: "h"},
	} {
		if err := m.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
