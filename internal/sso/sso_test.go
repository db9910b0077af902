package sso

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/egress"
	"verdict/internal/identity"
	"verdict/internal/store/sqlstore/sqlitetest"
)

type noSignIn struct{}

func (noSignIn) ExternalSignIn(context.Context, string, string, string, domain.Role, string) (*identity.Session, error) {
	return nil, errors.New("not reached")
}

func newService(t *testing.T, now time.Time) (*Service, *identity.Principal, *identity.Principal) {
	st := sqlitetest.Open(t)
	guard, err := egress.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	org := sqlitetest.Org(t, st, "Acme", domain.PlanTeam, now)
	admin := sqlitetest.As(sqlitetest.Member(t, st, org, "admin@acme.test", domain.RoleAdmin))
	dev := sqlitetest.As(sqlitetest.Member(t, st, org, "dev@acme.test", domain.RoleDeveloper))
	return New(Deps{Store: st, Box: sqlitetest.Box(t, 7), Egress: guard, Identity: noSignIn{},
		PublicURL: "https://verdict.example.com/", Clock: func() time.Time { return now }}), admin, dev
}

func code(err error) string {
	var de *domain.Error
	if errors.As(err, &de) {
		return de.Code
	}
	return ""
}

func ptr[T any](v T) *T { return &v }

// TestPutRules: admins only; every field checked before the provider is called; an internal
// issuer refused by the egress guard (no provider is reached in this tier).
func TestPutRules(t *testing.T) {
	s, admin, dev := newService(t, time.Now())
	ctx := context.Background()
	good := Input{Issuer: ptr("https://id.acme.test"), ClientID: ptr("verdict"), ClientSecret: ptr("s"),
		Domains: &[]string{"acme.test"}, DefaultRole: ptr("viewer")}
	if _, err := s.Put(ctx, dev, good); code(err) != "Forbidden" {
		t.Fatalf("developer: %v", err)
	}
	if _, err := s.Get(ctx, dev); code(err) != "Forbidden" {
		t.Fatalf("developer reads: %v", err)
	}
	for name, in := range map[string]Input{
		"no issuer":    {ClientID: good.ClientID, Domains: good.Domains, DefaultRole: good.DefaultRole},
		"no secret":    {Issuer: good.Issuer, ClientID: good.ClientID, Domains: good.Domains, DefaultRole: good.DefaultRole},
		"bad scheme":   {Issuer: ptr("javascript:alert(1)"), ClientID: good.ClientID, ClientSecret: good.ClientSecret, Domains: good.Domains, DefaultRole: good.DefaultRole},
		"bad role":     {Issuer: good.Issuer, ClientID: good.ClientID, ClientSecret: good.ClientSecret, Domains: good.Domains, DefaultRole: ptr("owner")},
		"bad domain":   {Issuer: good.Issuer, ClientID: good.ClientID, ClientSecret: good.ClientSecret, Domains: &[]string{"acme"}, DefaultRole: good.DefaultRole},
		"no domains":   {Issuer: good.Issuer, ClientID: good.ClientID, ClientSecret: good.ClientSecret, Domains: &[]string{}, DefaultRole: good.DefaultRole},
		"empty client": {Issuer: good.Issuer, ClientID: ptr(" "), ClientSecret: good.ClientSecret, Domains: good.Domains, DefaultRole: good.DefaultRole},
	} {
		if _, err := s.Put(ctx, admin, in); code(err) != "Validation error" && code(err) != "Missing required fields" {
			t.Errorf("%s: %v", name, err)
		}
	}
	internal := good
	internal.Issuer = ptr("http://127.0.0.1:1/")
	if _, err := s.Put(ctx, admin, internal); code(err) != "Issuer refused" {
		t.Fatalf("internal issuer: %v", err)
	}
	v, err := s.Get(ctx, admin)
	if err != nil || v.Configured || v.RedirectURL != "https://verdict.example.com/auth/sso/callback" {
		t.Fatalf("nothing saved: %+v %v", v, err)
	}
}

// TestFinishChecksTheFlow: a callback without this browser's flow, with an expired one, with
// another state, or carrying the provider's refusal ends before any call to the provider.
func TestFinishChecksTheFlow(t *testing.T) {
	now := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	s, _, _ := newService(t, now)
	ctx := context.Background()
	seal := func(f flow) string {
		raw, _ := json.Marshal(f)
		v, err := s.box.Seal(raw)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	live := seal(flow{OrgID: "o", State: "st", Nonce: "n", Verifier: "v", Expires: now.Add(time.Minute).Unix()})
	for name, c := range map[string]struct {
		cb   Callback
		want string
	}{
		"no flow":        {Callback{State: "st", Code: "c"}, "Sign-in expired"},
		"forged flow":    {Callback{Flow: "v1.AAAA", State: "st", Code: "c"}, "Sign-in expired"},
		"expired flow":   {Callback{Flow: seal(flow{State: "st", Expires: now.Add(-time.Second).Unix()}), State: "st", Code: "c"}, "Sign-in expired"},
		"other state":    {Callback{Flow: live, State: "other", Code: "c"}, "Invalid sign-in state"},
		"no state":       {Callback{Flow: live, Code: "c"}, "Invalid sign-in state"},
		"provider error": {Callback{Flow: live, State: "st", Error: "access_denied"}, "Sign-in refused by the provider"},
		"no code":        {Callback{Flow: live, State: "st"}, "Missing code"},
	} {
		if _, err := s.Finish(ctx, c.cb); code(err) != c.want {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}
