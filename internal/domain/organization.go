package domain

import "time"

// Plan is an organization's billing plan.
type Plan string

const (
	PlanFree       Plan = "free"
	PlanTeam       Plan = "team"
	PlanEnterprise Plan = "enterprise"
)

// Valid reports whether p is a known plan.
func (p Plan) Valid() bool { return p == PlanFree || p == PlanTeam || p == PlanEnterprise }

// Unlimited marks a limit without bound.
const Unlimited = -1

// Limits are a plan's bounds (the plan table is LimitsFor). -1 means unlimited.
type Limits struct {
	MaxUsers          int   `json:"maxUsers"`
	MaxTestRuns       int   `json:"maxTestRuns"`
	MaxProjects       int   `json:"maxProjects"`
	MaxConcurrentRuns int   `json:"maxConcurrentRuns"`
	MaxStorageBytes   int64 `json:"maxStorageBytes"`
}

const gib = int64(1) << 30

var planLimits = map[Plan]Limits{
	PlanFree:       {MaxUsers: 3, MaxTestRuns: 100, MaxProjects: 1, MaxConcurrentRuns: 1, MaxStorageBytes: 1 * gib},
	PlanTeam:       {MaxUsers: 20, MaxTestRuns: 1000, MaxProjects: 10, MaxConcurrentRuns: 5, MaxStorageBytes: 10 * gib},
	PlanEnterprise: {MaxUsers: Unlimited, MaxTestRuns: Unlimited, MaxProjects: Unlimited, MaxConcurrentRuns: 20, MaxStorageBytes: 100 * gib},
}

// LimitsFor returns the plan table's limits; an unknown plan gets the free plan's.
func LimitsFor(p Plan) Limits {
	if l, ok := planLimits[p]; ok {
		return l
	}
	return planLimits[PlanFree]
}

// Allows reports whether one more unit fits under limit when used are in use.
func Allows(limit int64, used int64) bool { return limit == Unlimited || used < limit }

// Features are per-organization feature flags.
type Features struct {
	AIFeatures AIFeatures `json:"aiFeatures"`
}

// AIFeatures are the flags of the AI features.
type AIFeatures struct {
	AutomationPlanner bool `json:"automationPlanner"`
}

// BillingStatus is the subscription state driven by payment-provider events.
type BillingStatus string

const (
	BillingActive   BillingStatus = "active"
	BillingPastDue  BillingStatus = "past_due"
	BillingCanceled BillingStatus = "canceled"
)

// Billing is the organization's link to the payment provider (updated by webhooks).
type Billing struct {
	ProviderCustomerID     string        `json:"providerCustomerId,omitempty"`
	ProviderSubscriptionID *string       `json:"providerSubscriptionId"`
	Status                 BillingStatus `json:"status,omitempty"`
	LastPaymentDate        *time.Time    `json:"lastPaymentDate,omitempty"`
	LastPaymentAmount      *float64      `json:"lastPaymentAmount,omitempty"`
	LastPaymentAttempt     *time.Time    `json:"lastPaymentAttempt,omitempty"`
	CurrentPeriodStart     *time.Time    `json:"currentPeriodStart,omitempty"`
	CurrentPeriodEnd       *time.Time    `json:"currentPeriodEnd,omitempty"`
	// EventAt and StatusAt are the creation times of the newest provider events applied to the
	// subscription (plan, period) and to the status, so an older event delivered late never
	// rolls the organization back.
	EventAt  *time.Time `json:"eventAt,omitempty"`
	StatusAt *time.Time `json:"statusAt,omitempty"`
}

// Organization is a tenant.
type Organization struct {
	ID                string
	Name              string
	Slug              string
	Plan              Plan
	AIAnalysisEnabled bool
	Features          Features
	Billing           Billing
	StorageUsedBytes  int64
	CreatedAt         time.Time
	// AllowedImages are the organization's image patterns, narrowing the server's; empty: the
	// server's alone (see ImageAllowed).
	AllowedImages []string
	// AIDefaultModel is the model chosen for failure analysis ("builtin" or
	// "<provider>:<model>"); empty: the first one available.
	AIDefaultModel string
	// AIKeys are the organization's own model provider keys by provider, sealed.
	AIKeys map[string]string
	// Retention is the organization's own retention of its runs' history; nil values keep the
	// plan's (see EffectiveRetention).
	Retention RetentionSetting
	// EraseAt, when set, is when the organization is erased: an admin asked for it, and until
	// then (the grace period) its admins may cancel it and it queues no new run.
	// EraseRequestedBy is the admin who asked.
	EraseAt          *time.Time
	EraseRequestedBy string
}

// Limits returns the organization's plan limits.
func (o *Organization) Limits() Limits { return LimitsFor(o.Plan) }

// BillingPeriod is the organization's current billing period at now: the subscription's
// period when one is known and current, else the calendar month in UTC.
func BillingPeriod(org *Organization, now time.Time) (start, end time.Time) {
	b := org.Billing
	if b.CurrentPeriodStart != nil && b.CurrentPeriodEnd != nil && !now.Before(*b.CurrentPeriodStart) && now.Before(*b.CurrentPeriodEnd) {
		return *b.CurrentPeriodStart, *b.CurrentPeriodEnd
	}
	now = now.UTC()
	start = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	return start, start.AddDate(0, 1, 0)
}
