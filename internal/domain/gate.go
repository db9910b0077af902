package domain

import (
	"errors"
	"maps"
	"slices"
	"time"
)

// GateRules are a project's quality-gate rules, each optional (nil: not checked; a false
// NoNewFailures or NoNewFlaky is not checked either).
type GateRules struct {
	MinTests           *int     `json:"minTests"`
	MaxFailed          *int     `json:"maxFailed"`
	MinPassRate        *float64 `json:"minPassRate"` // 0..1
	NoNewFailures      *bool    `json:"noNewFailures"`
	NoNewFlaky         *bool    `json:"noNewFlaky"`
	MaxDurationSeconds *int     `json:"maxDurationSeconds"`
	// BaselineLabels choose a run's baseline: the newest finished run of the project carrying
	// every one of them; empty: branch:main when runs carry a branch label, else the project's
	// newest finished run before it.
	BaselineLabels map[string]string `json:"baselineLabels"`
}

// Names of the gate's rules, in the order a gate lists them.
const (
	RuleMinTests           = "minTests"
	RuleMaxFailed          = "maxFailed"
	RuleMinPassRate        = "minPassRate"
	RuleNoNewFailures      = "noNewFailures"
	RuleNoNewFlaky         = "noNewFlaky"
	RuleMaxDurationSeconds = "maxDurationSeconds"
)

// MaxGateCount bounds a rule's count (tests, failures, seconds): far above any real suite, low
// enough that every database stores it as it is.
const MaxGateCount = 1_000_000_000

// Judges reports whether r has a rule to check: without one a run has no gate (baseline labels
// alone choose the baseline compare uses, and judge nothing).
func (r *GateRules) Judges() bool {
	if r == nil {
		return false
	}
	on := func(b *bool) bool { return b != nil && *b }
	return r.MinTests != nil || r.MaxFailed != nil || r.MinPassRate != nil || on(r.NoNewFailures) ||
		on(r.NoNewFlaky) || r.MaxDurationSeconds != nil
}

// Baseline is the labels a run's baseline carries under r: its BaselineLabels, or when it has
// none, branch:main for a run with a branch label (labels), and nothing else (the newest finished
// run before it).
func (r *GateRules) Baseline(labels map[string]string) []Label {
	var set map[string]string
	if r != nil {
		set = r.BaselineLabels
	}
	if len(set) == 0 {
		if _, ok := labels[BranchLabel]; ok {
			return []Label{{Key: BranchLabel, Value: "main"}}
		}
		return nil
	}
	out := make([]Label, 0, len(set))
	for _, k := range slices.Sorted(maps.Keys(set)) {
		out = append(out, Label{Key: k, Value: set[k]})
	}
	return out
}

// ValidateGateRules checks rules as a client sends them: counts from 0 to MaxGateCount,
// minPassRate from 0 to 1, baseline labels as a run's labels are (ValidateLabels). The error is a
// 400 naming the rule.
func ValidateGateRules(r *GateRules) error {
	for _, c := range []struct {
		name string
		v    *int
	}{{RuleMinTests, r.MinTests}, {RuleMaxFailed, r.MaxFailed}, {RuleMaxDurationSeconds, r.MaxDurationSeconds}} {
		if c.v != nil && (*c.v < 0 || *c.v > MaxGateCount) {
			return BadRequest("Validation error", c.name+" must be a whole number from 0 to 1000000000")
		}
	}
	if r.MinPassRate != nil && !(*r.MinPassRate >= 0 && *r.MinPassRate <= 1) {
		return BadRequest("Validation error", "minPassRate must be a number from 0 to 1")
	}
	if err := ValidateLabels(r.BaselineLabels); err != nil {
		var e *Error
		if errors.As(err, &e) {
			return BadRequest(e.Code, "baselineLabels: "+e.Message)
		}
		return err
	}
	return nil
}

// Gate statuses.
const (
	GatePassed = "passed"
	GateFailed = "failed"
)

// Gate is the quality gate's judgement of a run, stored on it.
type Gate struct {
	Status         string     `json:"status"` // GatePassed or GateFailed
	Rules          []GateRule `json:"rules"`
	BaselineTaskID string     `json:"baselineTaskId"` // "" when the run had none
	EvaluatedAt    time.Time  `json:"evaluatedAt"`
}

// GateRule is one rule's judgement.
type GateRule struct {
	Rule      string  `json:"rule"`
	Passed    bool    `json:"passed"`
	Actual    float64 `json:"actual"`
	Threshold float64 `json:"threshold"`
	Message   string  `json:"message"`
}
