package notify

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode"

	"verdict/internal/domain"
	"verdict/internal/egress"
)

// Input is a notification as a client sends it.
type Input struct {
	Kind   string   `json:"kind"`   // slack, teams or webhook
	URL    string   `json:"url"`    // the receiver's URL (a secret: never shown again)
	On     []string `json:"on"`     // failure, gate_failed, recovery, always: at least one
	Secret string   `json:"secret"` // a webhook's signing secret; "": one is generated
}

var (
	kinds = []string{domain.NotifySlack, domain.NotifyTeams, domain.NotifyWebhook}
	rules = []string{domain.NotifyOnFailure, domain.NotifyOnGateFailed, domain.NotifyOnRecovery, domain.NotifyOnAlways}
)

func invalid(format string, args ...any) *domain.Error {
	return domain.BadRequest("Validation error", fmt.Sprintf(format, args...))
}

// Check checks in as a client sent it and returns it normalised (the rules deduplicated, in
// their documented order): a known kind; an http or https URL of at most MaxURLBytes that
// guard allows (no internal address unless the operator allowed it); at least one known rule;
// a secret only for a webhook, of MinSecretBytes to MaxSecretBytes printable characters without
// spaces. Its refusal names the field and what is wrong with it, never the URL's secret parts.
func Check(guard *egress.Guard, in Input) (Input, error) {
	if !slices.Contains(kinds, in.Kind) {
		return in, invalid("kind must be one of %s", strings.Join(kinds, ", "))
	}
	if in.URL == "" {
		return in, invalid("url is required")
	}
	if len(in.URL) > MaxURLBytes {
		return in, invalid("url must be at most %d bytes", MaxURLBytes)
	}
	if strings.ContainsFunc(in.URL, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return in, invalid("url must not contain spaces or control characters")
	}
	if err := guard.CheckURL(in.URL); err != nil {
		return in, invalid("url %s", strings.TrimPrefix(err.Error(), egress.ErrRefused.Error()+": "))
	}
	if u, _ := url.Parse(in.URL); u.Fragment != "" {
		return in, invalid("url must not have a fragment")
	}
	if len(in.On) == 0 {
		return in, invalid("on must name at least one of %s", strings.Join(rules, ", "))
	}
	var on []string
	for _, r := range rules {
		if slices.Contains(in.On, r) {
			on = append(on, r)
		}
	}
	for _, r := range in.On {
		if !slices.Contains(rules, r) {
			return in, invalid("on: %q is not one of %s", clipText(r, 40), strings.Join(rules, ", "))
		}
	}
	in.On = on
	if in.Secret != "" {
		if in.Kind != domain.NotifyWebhook {
			return in, invalid("secret is only for a webhook (Slack and Teams URLs carry their own)")
		}
		if len(in.Secret) < MinSecretBytes || len(in.Secret) > MaxSecretBytes {
			return in, invalid("secret must be %d to %d characters", MinSecretBytes, MaxSecretBytes)
		}
		for _, r := range in.Secret {
			if r <= ' ' || r > '~' {
				return in, invalid("secret must be printable ASCII characters without spaces")
			}
		}
	}
	return in, nil
}

// clipText bounds a client's text quoted back in a refusal.
func clipText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
