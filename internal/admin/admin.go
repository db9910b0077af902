// Package admin holds the operator's commands that change the database directly, with no
// principal and no outside service: `verdict admin set-plan`. They write the audit log as the
// services do, with the operator's command as the actor.
package admin

import (
	"context"
	"errors"
	"fmt"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// Actor is the audit log's actor of a change made by an operator's command.
const Actor = domain.AuditOperator

// ErrUnknownOrganization is returned when no organization has the ID or slug given.
var ErrUnknownOrganization = errors.New("no organization with this ID or slug")

// PlanChange is what SetPlan did.
type PlanChange struct {
	Organization *domain.Organization // as it is now
	From, To     domain.Plan
}

// SetPlan gives the organization named by ref (its ID, else its slug, which must then name one
// organization) the plan, in one transaction with the organization locked, and records the
// change in its audit log as "organization.updated", the way an admin's settings change is
// recorded. The organization's billing (the payment provider's customer and subscription) is
// left as it is: a later webhook of the provider still applies. Setting the plan it already
// has changes and records nothing.
func SetPlan(ctx context.Context, st store.Store, ref string, plan domain.Plan, clock domain.Clock) (*PlanChange, error) {
	if !plan.Valid() {
		return nil, fmt.Errorf("unknown plan %q: want free, team or enterprise", plan)
	}
	if clock == nil {
		clock = domain.SystemClock
	}
	id, err := resolve(ctx, st, ref)
	if err != nil {
		return nil, err
	}
	var change *PlanChange
	err = st.InTx(ctx, func(tx store.Store) error {
		if err := tx.Organizations().Lock(ctx, id); err != nil {
			return err
		}
		o, err := tx.Organizations().Get(ctx, id)
		if err != nil {
			return err
		}
		change = &PlanChange{Organization: o, From: o.Plan, To: plan}
		if o.Plan == plan {
			return nil
		}
		if err := tx.Organizations().UpdatePlan(ctx, o.ID, plan, o.Billing); err != nil {
			return err
		}
		o.Plan = plan
		return tx.Audit().Append(ctx, &domain.AuditEntry{ID: domain.NewID(), OrganizationID: o.ID, ActorID: Actor,
			Action: "organization.updated", TargetType: "organization", TargetID: o.ID,
			Details:   map[string]any{"plan": map[string]any{"from": string(change.From), "to": string(plan)}, "via": "verdict admin set-plan"},
			CreatedAt: clock()})
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrUnknownOrganization // deleted in between
	}
	if err != nil {
		return nil, err
	}
	return change, nil
}

// resolve finds the organization's ID from its ID or its slug.
func resolve(ctx context.Context, st store.Store, ref string) (string, error) {
	if ref == "" {
		return "", ErrUnknownOrganization
	}
	o, err := st.Organizations().Get(ctx, ref)
	if err == nil {
		return o.ID, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	found, err := st.Organizations().FindBySlug(ctx, ref)
	if err != nil {
		return "", err
	}
	switch len(found) {
	case 0:
		return "", ErrUnknownOrganization
	case 1:
		return found[0].ID, nil
	}
	ids := make([]string, len(found))
	for i, o := range found {
		ids[i] = o.ID
	}
	return "", fmt.Errorf("the slug %q names %d organizations (%v): name one by its ID", ref, len(found), ids)
}
