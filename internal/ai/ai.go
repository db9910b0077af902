// Package ai holds what failure analysis and its model providers share: the categories a
// failure falls into and the finding an analyser, built-in or a model, reports.
package ai

// Category is what kind of failure a run had.
type Category string

const (
	ProductBug  Category = "product_bug" // the application under test misbehaved
	TestBug     Category = "test_bug"    // the test code is wrong (selectors, fixtures, syntax)
	Environment Category = "environment" // infrastructure: timeouts, refused connections, OOM, missing reports
	Flaky       Category = "flaky"       // passes and fails without a change
	Unknown     Category = "unknown"
)

// Categories lists every category, in the order the API reference gives them.
var Categories = []Category{ProductBug, TestBug, Environment, Flaky, Unknown}

// Valid reports whether c is one of Categories.
func (c Category) Valid() bool {
	for _, k := range Categories {
		if c == k {
			return true
		}
	}
	return false
}

// Finding is an analyser's conclusion about a failed run: exactly the object a model is asked
// for with its provider's structured output.
type Finding struct {
	Category     Category `json:"category"`
	Summary      string   `json:"summary"`
	RootCause    string   `json:"rootCause"`
	SuggestedFix string   `json:"suggestedFix"`
	Confidence   float64  `json:"confidence"` // 0..1
}
