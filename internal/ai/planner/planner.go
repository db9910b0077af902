package planner

import (
	"errors"
	"fmt"
	"strings"
)

// MaxTests is the most test cases one plan covers.
const MaxTests = 30

// Case is a manual test case as the planner reads it.
type Case struct {
	ID            string   `json:"id"`
	Title         string   `json:"title"`
	Suite         string   `json:"suite,omitempty"`
	Tags          []string `json:"tags,omitempty"`
	Priority      string   `json:"priority,omitempty"` // "critical", "high", "medium", "low" or ""
	Preconditions string   `json:"preconditions,omitempty"`
	Steps         []Step   `json:"steps,omitempty"`
}

// Step is one step of a manual test case: what to do and what should happen.
type Step struct {
	Action   string `json:"action"`
	Expected string `json:"expected"`
}

// History is the project's recent failure history, as far as the caller knows it. Suite
// names and test titles are matched without regard to case or repeated spaces.
type History struct {
	Runs   int            // how many of the project's latest runs the counts cover; 0 if unknown
	Suites map[string]int // suite name → failures of its tests in those runs
	Tests  map[string]int // test title → failures of the test in those runs
}

// Level is a risk level.
type Level string

const (
	Critical Level = "CRITICAL"
	High     Level = "HIGH"
	Medium   Level = "MEDIUM"
	Low      Level = "LOW"
)

// Levels lists the levels from the highest.
var Levels = []Level{Critical, High, Medium, Low}

// rank orders levels: 0 for the highest.
func (l Level) rank() int {
	for i, k := range Levels {
		if l == k {
			return i
		}
	}
	return len(Levels)
}

// NoSuite is the suite a case without one is grouped under.
const NoSuite = "No suite"

// Errors, used as the Kind of an [*InputError]: test them with errors.Is. Every one is a
// mistake in the request, which an API answers with 400.
var (
	ErrUnknownFramework = errors.New("unknown framework")
	ErrUnknownPattern   = errors.New("unknown design pattern")
	ErrNoTests          = errors.New("no test cases selected")
	ErrTooManyTests     = errors.New("too many test cases selected")
	ErrBadCase          = errors.New("invalid test case")
)

// ErrInvalidPlan is what Validate's errors match: a document that is not a complete plan.
var ErrInvalidPlan = errors.New("the document is not a complete plan")

// InputError is a request the planner refuses. Message is a sentence fit for the API's error
// message; Kind is one of the Err values above.
type InputError struct {
	Kind    error
	Message string
}

func (e *InputError) Error() string { return e.Message }

func (e *InputError) Unwrap() error { return e.Kind }

// ParseFramework returns the framework named s, exactly as Frameworks spells it.
func ParseFramework(s string) (Framework, error) {
	for _, f := range Frameworks {
		if string(f) == s {
			return f, nil
		}
	}
	return "", &InputError{Kind: ErrUnknownFramework, Message: "framework must be one of " + list(Frameworks)}
}

// ParsePattern returns the design pattern named s, exactly as Patterns spells it.
func ParsePattern(s string) (Pattern, error) {
	for _, p := range Patterns {
		if string(p) == s {
			return p, nil
		}
	}
	return "", &InputError{Kind: ErrUnknownPattern, Message: "designPattern must be one of " + list(Patterns)}
}

func list[T ~string](items []T) string {
	s := make([]string, len(items))
	for i, it := range items {
		s[i] = string(it)
	}
	return strings.Join(s, ", ")
}

// checkSelection refuses a selection a plan cannot be made of: none, more than MaxTests, a
// case without an ID, or two with the same.
func checkSelection(cases []Case) error {
	switch {
	case len(cases) == 0:
		return &InputError{Kind: ErrNoTests, Message: "select at least one test case"}
	case len(cases) > MaxTests:
		return &InputError{Kind: ErrTooManyTests, Message: fmt.Sprintf("at most %d test cases can be planned at once, not %d", MaxTests, len(cases))}
	}
	seen := make(map[string]bool, len(cases))
	for i, c := range cases {
		id := strings.TrimSpace(c.ID)
		if id == "" {
			return &InputError{Kind: ErrBadCase, Message: fmt.Sprintf("test case %d has no id", i+1)}
		}
		if seen[id] {
			return &InputError{Kind: ErrBadCase, Message: "test case " + clip(id, 64) + " is selected twice"}
		}
		seen[id] = true
	}
	return nil
}
