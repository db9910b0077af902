package analysis

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"verdict/internal/ai/models"
	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/store"
)

// Config is an organization's model settings as the API shows them: never a key.
type Config struct {
	DefaultModel string
	// Models are "builtin" and "<provider>:<model>" for every provider with a key (the
	// organization's own, else the server's), plus the chosen default when it is another
	// model of such a provider.
	Models []string
	// OwnKeys tells, for every provider, whether the organization saved a key of its own.
	OwnKeys map[models.Provider]bool
}

// ConfigPatch changes an organization's model settings; nil fields stay as they are.
type ConfigPatch struct {
	DefaultModel *string
	// OwnKey saves a key of the organization's own for a provider, once the provider accepts it.
	OwnKey *OwnKey
	// RemoveOwnKey forgets the organization's own key for a provider.
	RemoveOwnKey *string
}

// OwnKey is a provider key an organization brings.
type OwnKey struct {
	Provider string
	APIKey   string
}

// maxKeyBytes bounds a saved key: providers' keys are a few hundred bytes at most.
const maxKeyBytes = 1024

var (
	errNotFound     = domain.NotFound("Execution not found", "No such execution in your organization")
	errReadOnly     = domain.Forbidden("Forbidden", "Viewers cannot analyse or triage runs")
	errInvalidKey   = domain.BadRequest("Invalid API key", "The provider refused this API key; nothing was saved")
	errKeyUnchecked = domain.Upstream("AI provider unavailable", "The provider could not be reached to check the key; nothing was saved")
)

func validation(format string, args ...any) *domain.Error {
	return domain.BadRequest("Validation error", fmt.Sprintf(format, args...))
}

// choice is the model an organization's analyses use.
type choice struct {
	name     string // as configured: "<provider>:<model>"
	provider models.Provider
	model    string
	key      string
	// missing says why a configured model cannot be used (its provider has no key any more).
	missing string
}

// providerKey is the key analyses of org use with p: its own, else the server's; "" for none.
func (s *Service) providerKey(org *domain.Organization, p models.Provider) string {
	if sealed := org.AIKeys[string(p)]; sealed != "" && s.box != nil {
		if key, err := s.box.Open(sealed); err == nil {
			return string(key)
		}
		s.log.Error("an organization's provider key could not be opened", "org", org.ID, "provider", p)
	}
	return s.serverKeys[p]
}

// Model is the model an organization's requests go to (failure analysis, the planner):
// Provider is empty for the built-in one, and Missing then says why a configured model is not
// used. Key is the API key to use: never log it.
type Model struct {
	Name     string // "<provider>:<model>"
	Provider models.Provider
	Model    string
	Key      string
	Missing  string
}

// ModelFor resolves the organization's default model with its key.
func (s *Service) ModelFor(ctx context.Context, orgID string) (Model, error) {
	org, err := s.store.Organizations().Get(ctx, orgID)
	if err != nil {
		return Model{}, err
	}
	c := s.choose(org)
	return Model{Name: c.name, Provider: c.provider, Model: c.model, Key: c.key, Missing: c.missing}, nil
}

// choose resolves the organization's default model: the one it chose, else the first
// provider with a key (with that provider's default model), else the built-in analyser.
func (s *Service) choose(org *domain.Organization) choice {
	name := org.AIDefaultModel
	if name == "" {
		for _, p := range models.Providers {
			if s.providerKey(org, p) != "" {
				name = models.FormatModel(p, models.DefaultModels[p])
				break
			}
		}
	}
	if name == "" || name == models.Builtin {
		return choice{}
	}
	p, model, err := models.ParseModel(name)
	if err != nil {
		return choice{missing: "the configured model " + name + " is not valid; the built-in analysis is shown"}
	}
	key := s.providerKey(org, p)
	if key == "" {
		return choice{missing: "no API key for " + string(p) + " (the default model is " + name + "); the built-in analysis is shown"}
	}
	return choice{name: name, provider: p, model: model, key: key}
}

// Config returns the organization's model settings; every member may read them.
func (s *Service) Config(ctx context.Context, p *identity.Principal) (*Config, error) {
	org, err := s.store.Organizations().Get(ctx, p.OrgID)
	if err != nil {
		return nil, err
	}
	return s.config(org), nil
}

func (s *Service) config(org *domain.Organization) *Config {
	c := &Config{Models: []string{models.Builtin}, OwnKeys: map[models.Provider]bool{}}
	for _, p := range models.Providers {
		c.OwnKeys[p] = org.AIKeys[string(p)] != ""
		if s.providerKey(org, p) != "" {
			c.Models = append(c.Models, models.FormatModel(p, models.DefaultModels[p]))
		}
	}
	ch := s.choose(org)
	c.DefaultModel = models.Builtin
	if ch.provider != "" {
		c.DefaultModel = ch.name
		if !contains(c.Models, ch.name) {
			c.Models = append(c.Models, ch.name)
		}
	}
	return c
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// UpdateConfig applies patch (admins only). A new own key is checked with the provider first:
// one it refuses is 400 Invalid API key and nothing changes. A default model must be
// "builtin" or "<provider>:<model>" of a provider with a key once the patch applies.
func (s *Service) UpdateConfig(ctx context.Context, p *identity.Principal, patch ConfigPatch) (*Config, error) {
	if err := p.RequireAdmin(); err != nil {
		return nil, err
	}
	if patch.DefaultModel == nil && patch.OwnKey == nil && patch.RemoveOwnKey == nil {
		return nil, domain.BadRequest("Missing required fields", "Give defaultModel, byok or removeByok")
	}
	var add *OwnKey
	if k := patch.OwnKey; k != nil {
		prov := models.Provider(strings.ToLower(strings.TrimSpace(k.Provider)))
		if !prov.Valid() {
			return nil, validation("byok.provider must be one of %s", providerList())
		}
		key := strings.TrimSpace(k.APIKey)
		if key == "" || len(key) > maxKeyBytes || strings.ContainsAny(key, " \t\r\n") {
			return nil, validation("byok.apiKey must be a key of 1 to %d characters without spaces", maxKeyBytes)
		}
		add = &OwnKey{Provider: string(prov), APIKey: key}
	}
	var remove models.Provider
	if patch.RemoveOwnKey != nil {
		remove = models.Provider(strings.ToLower(strings.TrimSpace(*patch.RemoveOwnKey)))
		if !remove.Valid() {
			return nil, validation("removeByok must be one of %s", providerList())
		}
	}
	if add != nil {
		if err := s.models.CheckKey(ctx, models.Provider(add.Provider), add.APIKey); err != nil {
			if errors.Is(err, models.ErrKeyRefused) {
				return nil, errInvalidKey
			}
			s.log.Warn("checking an organization's provider key failed", "org", p.OrgID, "provider", add.Provider, "err", err)
			return nil, errKeyUnchecked
		}
	}
	var out *Config
	err := s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Organizations().Lock(ctx, p.OrgID); err != nil {
			return err
		}
		org, err := tx.Organizations().Get(ctx, p.OrgID)
		if err != nil {
			return err
		}
		keys := maps.Clone(org.AIKeys)
		if keys == nil {
			keys = map[string]string{}
		}
		if remove != "" {
			delete(keys, string(remove))
		}
		if add != nil {
			sealed, err := s.box.Seal([]byte(add.APIKey))
			if err != nil {
				return err
			}
			keys[add.Provider] = sealed
		}
		org.AIKeys = keys
		if patch.DefaultModel != nil {
			name := strings.TrimSpace(*patch.DefaultModel)
			if name != models.Builtin {
				prov, _, err := models.ParseModel(name)
				if err != nil {
					return validation("defaultModel must be %q or <provider>:<model> (for example %q)", models.Builtin,
						models.FormatModel(models.OpenAI, models.DefaultModels[models.OpenAI]))
				}
				if s.providerKey(org, prov) == "" {
					return validation("defaultModel %q needs an API key for %s: save one with byok first", name, prov)
				}
			}
			org.AIDefaultModel = name
		}
		if err := tx.Organizations().SetAIConfig(ctx, org.ID, org.AIDefaultModel, keys); err != nil {
			return err
		}
		out = s.config(org)
		// Which keys changed, never their values.
		details := map[string]any{"defaultModel": org.AIDefaultModel}
		if add != nil {
			details["keySaved"] = add.Provider
		}
		if remove != "" {
			details["keyRemoved"] = string(remove)
		}
		return tx.Audit().Append(ctx, &domain.AuditEntry{OrganizationID: org.ID, ActorID: p.UserID,
			Action: "organization.ai_config_updated", TargetType: "organization", TargetID: org.ID, Details: details,
			CreatedAt: s.clock()})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func providerList() string {
	names := make([]string, len(models.Providers))
	for i, p := range models.Providers {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}
