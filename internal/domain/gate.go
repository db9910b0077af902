package domain

import "time"

// GateRules are a project's quality-gate rules, each optional (nil: not checked).
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
