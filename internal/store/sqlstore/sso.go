package sqlstore

import (
	"context"
	"encoding/json"

	"verdict/internal/domain"
)

type ssoRepo struct{ s *Store }

const ssoColumns = `organization_id, issuer, client_id, client_secret_cipher, domains, default_role, required, updated_at`

func scanSSO(r scanner) (*domain.SSOConfig, error) {
	var c domain.SSOConfig
	var domains string
	var updated int64
	if err := r.Scan(&c.OrganizationID, &c.Issuer, &c.ClientID, &c.ClientSecretCipher, &domains, &c.DefaultRole,
		&c.Required, &updated); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(domains), &c.Domains); err != nil {
		return nil, err
	}
	c.UpdatedAt = fromMillis(updated)
	return &c, nil
}

func (r ssoRepo) Get(ctx context.Context, orgID string) (*domain.SSOConfig, error) {
	return get(ctx, r.s, scanSSO, `SELECT `+ssoColumns+` FROM organization_sso WHERE organization_id = ?`, orgID)
}

func (r ssoRepo) ByDomain(ctx context.Context, emailDomain string) (*domain.SSOConfig, error) {
	return get(ctx, r.s, scanSSO, `SELECT `+ssoColumns+` FROM organization_sso
		WHERE organization_id = (SELECT organization_id FROM sso_domains WHERE domain = ?)`, emailDomain)
}

// Put replaces the provider and its domains in one transaction: the domains' primary key makes
// a domain another organization claims a conflict, which rolls the whole change back.
func (r ssoRepo) Put(ctx context.Context, c *domain.SSOConfig) error {
	if c.Domains == nil {
		c.Domains = []string{}
	}
	domains, err := json.Marshal(c.Domains)
	if err != nil {
		return err
	}
	return r.s.inTx(ctx, func(tx *Store) error {
		if _, err := tx.exec(ctx, `DELETE FROM organization_sso WHERE organization_id = ?`, c.OrganizationID); err != nil {
			return err
		}
		if _, err := tx.exec(ctx, `INSERT INTO organization_sso (`+ssoColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			c.OrganizationID, c.Issuer, c.ClientID, c.ClientSecretCipher, string(domains), c.DefaultRole, c.Required,
			millis(c.UpdatedAt)); err != nil {
			return err
		}
		if _, err := tx.exec(ctx, `DELETE FROM sso_domains WHERE organization_id = ?`, c.OrganizationID); err != nil {
			return err
		}
		for _, d := range c.Domains {
			if _, err := tx.exec(ctx, `INSERT INTO sso_domains (domain, organization_id) VALUES (?, ?)`, d, c.OrganizationID); err != nil {
				return err
			}
		}
		return nil
	})
}
