package analyzer

import (
	"slices"
	"time"

	"verdict/internal/ai"
)

// NearThreshold is the least word similarity (Jaccard index of Tokens) at which a person's
// triage of one failure is taken for another with a different signature. At 0.6 the same
// assertion or error raised from another test or page still matches (they share the
// exception, the assertion wording and most frames), while two different errors of the same
// test do not.
const NearThreshold = 0.6

// MaxTriages bounds the triages compared in one analysis: the most recent are used.
const MaxTriages = 2000

// Triage is a person's verdict on a failure, recorded by the caller.
type Triage struct {
	Signature string `json:"signature"`
	// Normalized is Normalize's text of the triaged failure; without it only failures with
	// the same signature match.
	Normalized string      `json:"normalized,omitempty"`
	Category   ai.Category `json:"category"`
	By         string      `json:"by"`     // the person's name or e-mail
	TaskID     string      `json:"taskId"` // the run the failure was triaged in
	At         time.Time   `json:"at"`
}

// triageIndex finds the triage that applies to a failure: the most recent of its signature,
// else the nearest by words (the most recent among equally near ones).
type triageIndex struct {
	exact map[string]*Triage
	near  []nearTriage
	found map[string]nearHit // by signature: a run often fails the same way many times
}

type nearHit struct {
	triage     *Triage
	similarity float64
}

type nearTriage struct {
	triage *Triage
	tokens []string
}

func newTriageIndex(triages []Triage) *triageIndex {
	x := &triageIndex{exact: map[string]*Triage{}, found: map[string]nearHit{}}
	// Most recent first; of two with the same time, the later record, as if appended last.
	order := make([]int, 0, len(triages))
	for i, t := range triages {
		if t.Category.Valid() && t.Category != ai.Unknown && t.Signature != "" {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := triages[b].At.Compare(triages[a].At); c != 0 {
			return c
		}
		return b - a
	})
	for _, i := range order {
		t := &triages[i]
		if _, seen := x.exact[t.Signature]; seen {
			continue
		}
		if len(x.exact) == MaxTriages {
			break
		}
		x.exact[t.Signature] = t
		if tokens := Tokens(clip(t.Normalized, maxNormalizedBytes)); len(tokens) > 0 {
			x.near = append(x.near, nearTriage{t, tokens})
		}
	}
	return x
}

// lookup returns the triage for a failure and how similar it is (1 for the same signature),
// or nil.
func (x *triageIndex) lookup(signature string, tokens func() []string) (*Triage, float64) {
	if t := x.exact[signature]; t != nil {
		return t, 1
	}
	if len(x.near) == 0 {
		return nil, 0
	}
	if hit, ok := x.found[signature]; ok {
		return hit.triage, hit.similarity
	}
	words := tokens()
	var hit nearHit
	for _, n := range x.near { // most recent first: a later one must be strictly nearer
		if !couldReach(len(words), len(n.tokens)) {
			continue
		}
		if s := Similarity(words, n.tokens); s >= NearThreshold && s > hit.similarity {
			hit = nearHit{n.triage, s}
		}
	}
	x.found[signature] = hit
	return hit.triage, hit.similarity
}

// couldReach reports whether sets of these sizes can reach NearThreshold: the index is at
// most the smaller over the larger.
func couldReach(a, b int) bool {
	if a > b {
		a, b = b, a
	}
	return a > 0 && float64(a) >= NearThreshold*float64(b)
}
