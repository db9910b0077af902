package domain

import "time"

// Analysis statuses.
const (
	AnalysisCompleted = "completed"
	AnalysisFailed    = "failed"
)

// Analysis explains a failed run: what kind of failure it was, why, and what to do. It is
// written by the built-in analyser or a model, and never changes the run's verdict.
type Analysis struct {
	Status       string       `json:"status"`   // AnalysisCompleted or AnalysisFailed
	Provider     string       `json:"provider"` // builtin, openai, gemini, anthropic
	Model        string       `json:"model"`
	Category     string       `json:"category"` // product_bug, test_bug, environment, flaky, unknown
	Summary      string       `json:"summary"`
	RootCause    string       `json:"rootCause"`
	SuggestedFix string       `json:"suggestedFix"`
	Confidence   float64      `json:"confidence"` // 0..1
	Failures     []FailureRef `json:"failures"`
	// Evidence are the built-in analyser's reasons, one line each.
	Evidence []string `json:"evidence"`
	// Error says why the model was not used (its failure, with the built-in answer instead),
	// or why no analysis could be made; nil when none.
	Error      *string   `json:"error"`
	CreatedAt  time.Time `json:"createdAt"`
	DurationMs int64     `json:"durationMs"`
	// Triage is a person's category for this run, when someone gave one.
	Triage *TriageRef `json:"triage"`
	// OtherCategories are the categories of the run's other failed tests, most severe first
	// (the run takes its most severe one); none when every failure has the run's category.
	OtherCategories []CategoryCount `json:"otherCategories,omitempty"`
}

// CategoryCount is how many of a run's failed tests fell in a category.
type CategoryCount struct {
	Category string `json:"category"`
	Failures int    `json:"failures"`
}

// FailureRef is one failed test of a run with its signature's history in the organization.
type FailureRef struct {
	Test            string `json:"test"`
	Signature       string `json:"signature"`
	Occurrences     int    `json:"occurrences"` // runs of the organization with it, this one included
	FirstSeenTaskID string `json:"firstSeenTaskId"`
	// Category, Confidence and Evidence are the built-in analyser's reading of this test alone:
	// its category, how often the rule that gave it is right on real failures, and why.
	Category   string  `json:"category,omitempty"`
	Confidence float64 `json:"confidence,omitempty"`
	Evidence   string  `json:"evidence,omitempty"`
}

// TriageRef is a person's category for a run, as shown on the run.
type TriageRef struct {
	Category string    `json:"category"`
	By       string    `json:"by"` // the person's name
	At       time.Time `json:"at"`
}

// Triage is a person's category for one failure signature of a run; the built-in analyser
// gives later failures with the same or a similar signature that category.
type Triage struct {
	ID             string
	OrganizationID string
	ExecutionID    string
	TaskID         string
	Signature      string
	Normalized     string // the failure's normalised text, for similarity
	Category       string
	UserID         string
	UserName       string
	CreatedAt      time.Time
}
