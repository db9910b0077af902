package analyzer

import (
	"fmt"

	"verdict/internal/ai"
)

// A rule's confidence is not a constant it was written with: it is how often the rule is right
// on the corpus of real failures (testdata/real), measured by the benchmark and kept in the
// generated table calibrated (calibration_gen.go, written by
// go test -run TestCalibrationTable -update). Two figures per rule:
//   - its precision on the held-out part is the confidence of the category it gives;
//   - its precision on the training part (the cases rules are written against) decides whether
//     it is trusted at all: a rule right on less than minTrustedPrecision of the failures it
//     decided there gives unknown, with what it saw as evidence.
//
// A rule the corpus has too few failures of (fewer than minCalibrationSamples in a part)
// keeps its written strength for that part's use.

// ruleCalibration is one rule's record on the corpus: failures it decided and how many of them
// it got right, in the training and held-out parts.
type ruleCalibration struct {
	TrainRight, Train     int
	HeldOutRight, HeldOut int
}

const (
	minCalibrationSamples = 3
	minTrustedPrecision   = 0.6
)

// trusted reports whether a rule may decide: it was right on enough of the training failures
// it decided, or the corpus has too few of them to say.
func (c ruleCalibration) trusted() bool {
	return c.Train < minCalibrationSamples || float64(c.TrainRight)/float64(c.Train) >= minTrustedPrecision
}

// confidence is the rule's held-out precision, or fallback when it decided too few held-out
// failures for one.
func (c ruleCalibration) confidence(fallback float64) float64 {
	if c.HeldOut < minCalibrationSamples {
		return fallback
	}
	return float64(c.HeldOutRight) / float64(c.HeldOut)
}

// calibrate replaces a decided failure's confidence by its rule's measured precision, and a
// rule too often wrong by unknown. Triages keep theirs: a person decided them.
func (a *analysed) calibrate() {
	a.proposed = a.category
	if a.triage != nil {
		return
	}
	c, ok := calibrated[a.reason.Rule]
	if !ok {
		return
	}
	if !c.trusted() {
		a.category, a.confidence = ai.Unknown, unknownRule.strength
		a.reason.Detail = fmt.Sprintf("%s; not trusted: it was right on %d of %d such failures of the corpus of real failures, under %.0f%%",
			a.reason.Detail, c.TrainRight, c.Train, minTrustedPrecision*100)
		return
	}
	a.confidence = c.confidence(a.confidence)
}
