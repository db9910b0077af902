// Package sso signs members in through their organization's OpenID Connect provider: an
// admin's settings (issuer, client, the client secret sealed, the e-mail domains it signs in,
// the role of the members it creates, whether passwords are refused), and the authorization
// code flow with PKCE, its state and nonce checked and the ID token verified against the
// issuer's keys (github.com/coreos/go-oidc with golang.org/x/oauth2). Every call to an issuer
// goes through the egress guard's client, since the issuer is a URL a tenant chose. The
// identity service opens the session (and creates the member) once the provider vouched for
// the address.
package sso

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"verdict/internal/crypto/secretbox"
	"verdict/internal/domain"
	"verdict/internal/egress"
	"verdict/internal/identity"
	"verdict/internal/store"
)

// CallbackPath is where the provider sends the browser back.
const CallbackPath = "/auth/sso/callback"

// flowTTL bounds the time from the start of a sign-in to its callback.
const flowTTL = 10 * time.Minute

// providerTTL is how long a provider's discovery document is reused before it is read again.
const providerTTL = 10 * time.Minute

// maxDomains bounds the e-mail domains of one organization's provider.
const maxDomains = 50

// SignIner opens a session for an address the provider vouched for (the identity service).
type SignIner interface {
	ExternalSignIn(ctx context.Context, orgID, email, name string, role domain.Role, issuer string) (*identity.Session, error)
}

// Deps are the Service's collaborators; Store, Box, Egress, Identity and PublicURL are required.
type Deps struct {
	Store    store.Store
	Box      *secretbox.Box
	Egress   *egress.Guard
	Identity SignIner
	// PublicURL is where browsers reach Verdict; the callback is PublicURL + CallbackPath,
	// which the admin registers with the provider.
	PublicURL string
	Clock     domain.Clock
	Log       *slog.Logger
}

// Service is the single sign-on service.
type Service struct {
	store     store.Store
	box       *secretbox.Box
	client    *http.Client
	identity  SignIner
	publicURL string
	clock     domain.Clock
	log       *slog.Logger

	mu        sync.Mutex
	providers map[string]cachedProvider // by issuer
}

type cachedProvider struct {
	p  *oidc.Provider
	at time.Time
}

// New builds the Service.
func New(d Deps) *Service {
	if d.Clock == nil {
		d.Clock = domain.SystemClock
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	return &Service{store: d.Store, box: d.Box, client: d.Egress.Client(15 * time.Second), identity: d.Identity,
		publicURL: strings.TrimRight(d.PublicURL, "/"), clock: d.Clock, log: d.Log, providers: map[string]cachedProvider{}}
}

// View is an organization's provider as admins read it; the client secret is never shown.
type View struct {
	Configured      bool        `json:"configured"`
	Issuer          string      `json:"issuer"`
	ClientID        string      `json:"clientId"`
	ClientSecretSet bool        `json:"clientSecretSet"`
	Domains         []string    `json:"domains"`
	DefaultRole     domain.Role `json:"defaultRole"`
	Required        bool        `json:"required"`
	// RedirectURL is the callback to register with the provider.
	RedirectURL string     `json:"redirectUrl"`
	UpdatedAt   *time.Time `json:"updatedAt"`
}

// Input is the body of PUT /api/organization/sso: the whole setting (clientSecret may be left
// out to keep the one saved).
type Input struct {
	Issuer       *string   `json:"issuer"`
	ClientID     *string   `json:"clientId"`
	ClientSecret *string   `json:"clientSecret"`
	Domains      *[]string `json:"domains"`
	DefaultRole  *string   `json:"defaultRole"`
	Required     *bool     `json:"required"`
}

func (s *Service) view(c *domain.SSOConfig) *View {
	v := &View{Domains: []string{}, DefaultRole: domain.RoleViewer, RedirectURL: s.publicURL + CallbackPath}
	if c == nil {
		return v
	}
	at := c.UpdatedAt
	v.Configured, v.Issuer, v.ClientID, v.ClientSecretSet, v.Domains, v.DefaultRole, v.Required, v.UpdatedAt =
		true, c.Issuer, c.ClientID, c.ClientSecretCipher != "", c.Domains, c.DefaultRole, c.Required, &at
	return v
}

// Get returns the organization's provider (admin only); configured is false when there is none.
func (s *Service) Get(ctx context.Context, p *identity.Principal) (*View, error) {
	if err := p.RequireAdmin(); err != nil {
		return nil, err
	}
	c, err := s.store.SSO().Get(ctx, p.OrgID)
	if errors.Is(err, store.ErrNotFound) {
		return s.view(nil), nil
	}
	if err != nil {
		return nil, err
	}
	return s.view(c), nil
}

func invalid(format string, args ...any) error {
	return domain.BadRequest("Validation error", fmt.Sprintf(format, args...))
}

// Put saves the organization's provider (admin only). The issuer is read (its discovery
// document, through the egress guard) before anything is saved, so a mistyped issuer is a 400
// rather than a sign-in that fails later. The change is audited without the secret.
func (s *Service) Put(ctx context.Context, p *identity.Principal, in Input) (*View, error) {
	if err := p.RequireAdmin(); err != nil {
		return nil, err
	}
	for name, v := range map[string]bool{"issuer": in.Issuer == nil, "clientId": in.ClientID == nil,
		"domains": in.Domains == nil, "defaultRole": in.DefaultRole == nil} {
		if v {
			return nil, domain.BadRequest("Missing required fields", name+" is required")
		}
	}
	issuer := strings.TrimSpace(*in.Issuer)
	u, err := url.Parse(issuer)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" || len(issuer) > 500 {
		return nil, invalid("issuer must be the provider's https URL, exactly as its tokens name it (e.g. https://id.example.com)")
	}
	clientID := strings.TrimSpace(*in.ClientID)
	if clientID == "" || len(clientID) > 255 {
		return nil, invalid("clientId must have 1 to 255 characters")
	}
	role := domain.Role(*in.DefaultRole)
	if !role.Valid() {
		return nil, invalid("defaultRole must be admin, developer or viewer")
	}
	domains := make([]string, 0, len(*in.Domains))
	for _, d := range *in.Domains {
		d = strings.ToLower(strings.TrimSpace(d))
		if !domain.ValidDomain(d) {
			return nil, invalid("domains must be e-mail domains such as example.com; %q is not one", d)
		}
		if !slices.Contains(domains, d) {
			domains = append(domains, d)
		}
	}
	if len(domains) == 0 || len(domains) > maxDomains {
		return nil, invalid("domains must list 1 to %d e-mail domains", maxDomains)
	}
	old, err := s.store.SSO().Get(ctx, p.OrgID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	c := &domain.SSOConfig{OrganizationID: p.OrgID, Issuer: issuer, ClientID: clientID, Domains: domains,
		DefaultRole: role, Required: in.Required != nil && *in.Required, UpdatedAt: s.clock()}
	switch {
	case in.ClientSecret != nil && strings.TrimSpace(*in.ClientSecret) != "":
		secret := strings.TrimSpace(*in.ClientSecret)
		if len(secret) > 1024 {
			return nil, invalid("clientSecret must have at most 1024 characters")
		}
		if c.ClientSecretCipher, err = s.box.Seal([]byte(secret)); err != nil {
			return nil, err
		}
	case old != nil:
		c.ClientSecretCipher = old.ClientSecretCipher
	default:
		return nil, domain.BadRequest("Missing required fields", "clientSecret is required")
	}
	if _, err := s.provider(ctx, issuer, true); err != nil {
		return nil, err
	}
	err = s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.SSO().Put(ctx, c); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return domain.Conflict("Domain already claimed", "Another organization signs in one of these e-mail domains")
			}
			return err
		}
		return tx.Audit().Append(ctx, &domain.AuditEntry{OrganizationID: p.OrgID, ActorID: p.UserID,
			Action: "organization.sso_updated", TargetType: "organization", TargetID: p.OrgID,
			Details: map[string]any{"issuer": issuer, "clientId": clientID, "domains": domains, "defaultRole": role,
				"required": c.Required, "secretChanged": in.ClientSecret != nil && strings.TrimSpace(*in.ClientSecret) != ""},
			CreatedAt: c.UpdatedAt})
	})
	if err != nil {
		return nil, err
	}
	return s.view(c), nil
}

var (
	errNoProvider = domain.NotFound("Single sign-on not set up",
		"No organization signs this e-mail address in through an identity provider")
	errFlowExpired = domain.BadRequest("Sign-in expired", "The sign-in took too long or was started elsewhere; start it again")
	errBadState    = domain.BadRequest("Invalid sign-in state", "The answer does not belong to the sign-in this browser started; start it again")
	errIDToken     = domain.Unauthorized("Invalid ID token", "The identity provider's answer could not be verified")
	errNotAllowed  = domain.Forbidden("E-mail domain not allowed", "The organization's provider does not sign in this e-mail address")
	errUnverified  = domain.Forbidden("E-mail not verified", "The identity provider has not verified this e-mail address")
)

// Lookup finds the provider that signs an address in: its organization's when the address is a
// member's, else the one claiming its domain. It returns the provider's name as the sign-in
// page shows it (the issuer's host).
func (s *Service) Lookup(ctx context.Context, email string) (*domain.SSOConfig, string, error) {
	email = domain.NormalizeEmail(email)
	if !domain.ValidEmail(email) {
		return nil, "", domain.BadRequest("Invalid email format", "The e-mail address is not valid")
	}
	var c *domain.SSOConfig
	u, err := s.store.Users().GetByEmail(ctx, email)
	switch {
	case err == nil:
		c, err = s.store.SSO().Get(ctx, u.OrganizationID)
	case errors.Is(err, store.ErrNotFound):
		c, err = s.store.SSO().ByDomain(ctx, domain.EmailDomain(email))
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, "", errNoProvider
	}
	if err != nil {
		return nil, "", err
	}
	name := c.Issuer
	if iu, err := url.Parse(c.Issuer); err == nil {
		name = iu.Host
	}
	return c, name, nil
}

// flow is what the browser carries (sealed, in a cookie) from the start of a sign-in to its
// callback: the organization, the state and nonce to check, the PKCE verifier.
type flow struct {
	OrgID    string `json:"o"`
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Expires  int64  `json:"e"` // unix seconds
}

// Start is a sign-in begun: the provider's authorization URL to send the browser to, and the
// sealed flow for the browser to keep until the callback.
type Start struct {
	URL  string
	Flow string
}

// Begin starts a sign-in for an address: the provider that signs it in, a fresh state, nonce
// and PKCE verifier, and the authorization URL (with the address as login_hint).
func (s *Service) Begin(ctx context.Context, email string) (*Start, error) {
	c, _, err := s.Lookup(ctx, email)
	if err != nil {
		return nil, err
	}
	prov, err := s.provider(ctx, c.Issuer, false)
	if err != nil {
		return nil, err
	}
	f := flow{OrgID: c.OrganizationID, State: rand.Text(), Nonce: rand.Text(), Verifier: oauth2.GenerateVerifier(),
		Expires: s.clock().Add(flowTTL).Unix()}
	raw, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	sealed, err := s.box.Seal(raw)
	if err != nil {
		return nil, err
	}
	conf := s.oauth(c, prov, "")
	return &Start{Flow: sealed, URL: conf.AuthCodeURL(f.State, oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier),
		oauth2.SetAuthURLParam("login_hint", domain.NormalizeEmail(email)))}, nil
}

// Callback is the provider's answer as the browser brings it back.
type Callback struct {
	Flow  string // the sealed flow the browser kept
	State string
	Code  string
	// Error and ErrorDescription are the provider's refusal, if any.
	Error, ErrorDescription string
}

// Finish ends a sign-in: the browser's flow opened and unexpired, the state equal to it, the
// code exchanged with the PKCE verifier, the ID token verified (issuer, audience, expiry,
// signature by the issuer's keys) with the flow's nonce, the address verified and allowed; then
// the identity service opens the session.
func (s *Service) Finish(ctx context.Context, cb Callback) (*identity.Session, error) {
	raw, err := s.box.Open(cb.Flow)
	var f flow
	if cb.Flow == "" || err != nil || json.Unmarshal(raw, &f) != nil || s.clock().Unix() > f.Expires {
		return nil, errFlowExpired
	}
	if cb.State == "" || cb.State != f.State {
		return nil, errBadState
	}
	if cb.Error != "" {
		return nil, domain.Unauthorized("Sign-in refused by the provider", oneLine(cb.Error+": "+cb.ErrorDescription))
	}
	if cb.Code == "" {
		return nil, domain.BadRequest("Missing code", "The provider's answer has no authorization code")
	}
	c, err := s.store.SSO().Get(ctx, f.OrgID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errNoProvider
	}
	if err != nil {
		return nil, err
	}
	secret, err := s.box.Open(c.ClientSecretCipher)
	if err != nil {
		return nil, err
	}
	prov, err := s.provider(ctx, c.Issuer, false)
	if err != nil {
		return nil, err
	}
	octx := oidc.ClientContext(ctx, s.client)
	tok, err := s.oauth(c, prov, string(secret)).Exchange(octx, cb.Code, oauth2.VerifierOption(f.Verifier))
	if err != nil {
		s.log.Warn("an identity provider refused a code", "org", f.OrgID, "issuer", c.Issuer, "err", err)
		return nil, domain.Upstream("Identity provider refused the sign-in", "The provider did not exchange the authorization code; start the sign-in again")
	}
	rawID, _ := tok.Extra("id_token").(string)
	if rawID == "" {
		return nil, errIDToken
	}
	idt, err := prov.Verifier(&oidc.Config{ClientID: c.ClientID, Now: s.clock}).Verify(octx, rawID)
	if err != nil {
		s.log.Warn("an ID token failed verification", "org", f.OrgID, "issuer", c.Issuer, "err", err)
		return nil, errIDToken
	}
	if idt.Nonce != f.Nonce {
		return nil, errIDToken
	}
	var claims struct {
		Subject       string `json:"sub"`
		Email         string `json:"email"`
		EmailVerified any    `json:"email_verified"`
		Name          string `json:"name"`
	}
	if err := idt.Claims(&claims); err != nil {
		return nil, errIDToken
	}
	if claims.Email == "" {
		// Many providers put the address only in the UserInfo answer for the code flow; that
		// answer counts only for the ID token's subject.
		ui, err := prov.UserInfo(octx, oauth2.StaticTokenSource(tok))
		if err != nil {
			s.log.Warn("reading a provider's UserInfo failed", "org", f.OrgID, "issuer", c.Issuer, "err", err)
			return nil, domain.Upstream("Identity provider unreachable", "The provider's UserInfo endpoint did not answer")
		}
		if ui.Subject != idt.Subject || ui.Claims(&claims) != nil {
			return nil, errIDToken
		}
		claims.EmailVerified = ui.EmailVerified
	}
	if claims.Email == "" {
		return nil, domain.Forbidden("No e-mail address", "The identity provider names no e-mail address for this account; it must grant the email scope")
	}
	if v, ok := claims.EmailVerified.(bool); ok && !v || claims.EmailVerified == "false" {
		return nil, errUnverified
	}
	email := domain.NormalizeEmail(claims.Email)
	if !slices.Contains(c.Domains, domain.EmailDomain(email)) {
		// A member of the organization of another domain (a contractor invited by e-mail)
		// may still sign in through it; anyone else is refused.
		u, err := s.store.Users().GetByEmail(ctx, email)
		if err != nil || u.OrganizationID != f.OrgID {
			return nil, errNotAllowed
		}
	}
	return s.identity.ExternalSignIn(ctx, f.OrgID, email, strings.TrimSpace(claims.Name), c.DefaultRole, c.Issuer)
}

// oauth is the OAuth 2 client of an organization's provider.
func (s *Service) oauth(c *domain.SSOConfig, p *oidc.Provider, secret string) *oauth2.Config {
	return &oauth2.Config{ClientID: c.ClientID, ClientSecret: secret, Endpoint: p.Endpoint(),
		RedirectURL: s.publicURL + CallbackPath, Scopes: []string{oidc.ScopeOpenID, "email", "profile"}}
}

// provider reads the issuer's discovery document through the egress guard, reusing one read
// in the last providerTTL unless fresh is asked (an admin saving the setting).
func (s *Service) provider(ctx context.Context, issuer string, fresh bool) (*oidc.Provider, error) {
	now := s.clock()
	s.mu.Lock()
	cp, ok := s.providers[issuer]
	s.mu.Unlock()
	if ok && !fresh && now.Sub(cp.at) < providerTTL {
		return cp.p, nil
	}
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, s.client), issuer)
	if err != nil {
		if errors.Is(err, egress.ErrRefused) {
			return nil, domain.BadRequest("Issuer refused", "The issuer's address is internal; the operator allows such hosts with VERDICT_EGRESS_ALLOW")
		}
		s.log.Warn("reading an identity provider's discovery document failed", "issuer", issuer, "err", err)
		return nil, domain.Upstream("Identity provider unreachable",
			"The issuer's discovery document (/.well-known/openid-configuration) could not be read, or names another issuer")
	}
	s.mu.Lock()
	s.providers[issuer] = cachedProvider{p: p, at: now}
	s.mu.Unlock()
	return p, nil
}

// oneLine bounds a provider's text for an error message.
func oneLine(s string) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) > 200 {
		return string(r[:200]) + "…"
	}
	return string(r)
}
