package notify

import (
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"

	"verdict/internal/domain"
	"verdict/internal/egress"
)

func TestCheck(t *testing.T) {
	guard, err := egress.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	ok := Input{Kind: "webhook", URL: "https://hooks.example.com/verdict?x=1", On: []string{"always", "failure", "always"}}
	got, err := Check(guard, ok)
	if err != nil || !slices.Equal(got.On, []string{"failure", "always"}) {
		t.Fatalf("Check(%+v) = %+v, %v; want the rules deduplicated in order", ok, got, err)
	}
	for _, c := range []struct {
		in   Input
		want string
	}{
		{Input{Kind: "email", URL: "https://x.example", On: []string{"always"}}, "kind must be one of slack, teams, webhook"},
		{Input{Kind: "slack", On: []string{"always"}}, "url is required"},
		{Input{Kind: "slack", URL: "ftp://x.example/", On: []string{"always"}}, "url must be an http or https URL with a host"},
		{Input{Kind: "slack", URL: "http://127.0.0.1:8080/hook", On: []string{"always"}}, "url 127.0.0.1 is a loopback, private, link-local or reserved address"},
		{Input{Kind: "webhook", URL: "http://169.254.169.254/latest/meta-data", On: []string{"always"}}, "url 169.254.169.254 is a loopback, private, link-local or reserved address"},
		{Input{Kind: "webhook", URL: "http://10.1.2.3/", On: []string{"always"}}, "url 10.1.2.3 is a loopback, private, link-local or reserved address"},
		{Input{Kind: "webhook", URL: "http://localhost:9000/", On: []string{"always"}}, "url localhost is the loopback host"},
		{Input{Kind: "webhook", URL: "https://u:p@x.example/", On: []string{"always"}}, "url must not carry a user name or password"},
		{Input{Kind: "webhook", URL: "https://x.example/" + strings.Repeat("a", MaxURLBytes), On: []string{"always"}}, "url must be at most 2048 bytes"},
		{Input{Kind: "webhook", URL: "https://x.example/a b", On: []string{"always"}}, "url must not contain spaces or control characters"},
		{Input{Kind: "webhook", URL: "https://x.example/"}, "on must name at least one of failure, gate_failed, recovery, always"},
		{Input{Kind: "webhook", URL: "https://x.example/", On: []string{"sometimes"}}, `on: "sometimes" is not one of failure, gate_failed, recovery, always`},
		{Input{Kind: "slack", URL: "https://x.example/", On: []string{"always"}, Secret: strings.Repeat("s", 20)}, "secret is only for a webhook (Slack and Teams URLs carry their own)"},
		{Input{Kind: "webhook", URL: "https://x.example/", On: []string{"always"}, Secret: "short"}, "secret must be 16 to 256 characters"},
		{Input{Kind: "webhook", URL: "https://x.example/", On: []string{"always"}, Secret: strings.Repeat("s", 15) + " x"}, "secret must be printable ASCII characters without spaces"},
	} {
		_, err := Check(guard, c.in)
		var de *domain.Error
		if !errors.As(err, &de) || de.Kind != domain.KindInvalid || de.Message != c.want {
			t.Errorf("Check(%+v) = %v; want 400 %q", c.in, err, c.want)
		}
	}
	// The operator's allowed host passes.
	allow, _ := egress.New([]string{"127.0.0.1"})
	if _, err := Check(allow, Input{Kind: "webhook", URL: "http://127.0.0.1:8080/hook", On: []string{"always"}}); err != nil {
		t.Fatalf("an allowed address was refused: %v", err)
	}
}

// FuzzCheck: any input is either refused with a 400 that does not repeat the URL's path or
// query (its credential), or accepted as a valid notification: a known kind, an http(s) URL to a
// host that is not internal, within its bound, known and distinct rules, a secret only for a
// webhook and within its bounds.
func FuzzCheck(f *testing.F) {
	f.Add("webhook", "https://hooks.example.com/services/T0/B0/XXXX", "failure,always", "")
	f.Add("slack", "http://127.0.0.1:1/x", "always", "")
	f.Add("teams", "https://[::1]/x", "recovery", "")
	f.Add("webhook", "https://x.example/", "gate_failed", "0123456789abcdef")
	f.Add("webhook", "http://169.254.169.254/latest", "always", "")
	f.Add("webhook", "https://x.example/\x00", "always,,", "\xff")
	guard, err := egress.New(nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, kind, raw, on, secret string) {
		in := Input{Kind: kind, URL: raw, Secret: secret}
		if on != "" {
			in.On = strings.Split(on, ",")
		}
		got, err := Check(guard, in)
		if err != nil {
			var de *domain.Error
			if !errors.As(err, &de) || de.Kind != domain.KindInvalid || de.Code != "Validation error" {
				t.Fatalf("Check refused with %v, not a 400", err)
			}
			if u, perr := url.Parse(raw); perr == nil && len(u.Path) > 8 && strings.Contains(de.Message, u.Path) {
				t.Fatalf("the refusal %q repeats the URL's path", de.Message)
			}
			return
		}
		if !slices.Contains(kinds, got.Kind) || len(got.URL) > MaxURLBytes || len(got.On) == 0 || len(got.On) > len(rules) {
			t.Fatalf("accepted %+v", got)
		}
		for i, r := range got.On {
			if !slices.Contains(rules, r) || slices.Contains(got.On[i+1:], r) {
				t.Fatalf("accepted the rules %q", got.On)
			}
		}
		if guard.CheckURL(got.URL) != nil {
			t.Fatalf("accepted a URL the guard refuses: %q", got.URL)
		}
		if got.Secret != "" && (got.Kind != domain.NotifyWebhook || len(got.Secret) < MinSecretBytes || len(got.Secret) > MaxSecretBytes) {
			t.Fatalf("accepted the secret %q for %s", got.Secret, got.Kind)
		}
	})
}
