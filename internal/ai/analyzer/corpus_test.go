package analyzer

import (
	"encoding/json"
	"os"
	"testing"

	"verdict/internal/ai"
)

// corpusCase is a run from testdata/corpus.json: real-looking failures of Playwright, pytest,
// JUnit and Cypress suites with the category a person would give the run.
type corpusCase struct {
	ID        string      `json:"id"`
	Framework string      `json:"framework"`
	Expected  ai.Category `json:"expected"`
	Note      string      `json:"note"`
	BaseURL   string      `json:"baseUrl"`
	ExitCode  *int        `json:"exitCode"`
	RunError  string      `json:"runError"`
	Log       string      `json:"log"`
	History   History     `json:"history"`
	Tests     []Test      `json:"tests"`
}

func (c *corpusCase) input() Input {
	return Input{TaskID: "run-" + c.ID, BaseURL: c.BaseURL, ExitCode: c.ExitCode, RunError: c.RunError, Tests: c.Tests, Log: c.Log}
}

func loadCorpus(tb testing.TB) []corpusCase {
	tb.Helper()
	data, err := os.ReadFile("testdata/corpus.json")
	if err != nil {
		tb.Fatal(err)
	}
	var cases []corpusCase
	if err := json.Unmarshal(data, &cases); err != nil {
		tb.Fatal(err)
	}
	return cases
}

// minAccuracy is the share of corpus runs the analyser must categorise as a person did.
const minAccuracy = 85.0

// corpusAccuracy analyses every case and returns the percentage right and the misses.
func corpusAccuracy(cases []corpusCase) (float64, []string) {
	right := 0
	var misses []string
	for i := range cases {
		c := &cases[i]
		got := Analyse(c.input(), c.History, nil)
		if got.Category == c.Expected {
			right++
			continue
		}
		misses = append(misses, c.ID+": want "+string(c.Expected)+", got "+string(got.Category)+" ("+got.Summary+")")
	}
	return 100 * float64(right) / float64(len(cases)), misses
}

func TestCorpusAccuracy(t *testing.T) {
	cases := loadCorpus(t)
	if len(cases) < 40 {
		t.Fatalf("the corpus has %d cases, want at least 40", len(cases))
	}
	frameworks := map[string]int{}
	for _, c := range cases {
		frameworks[c.Framework]++
		if !c.Expected.Valid() {
			t.Errorf("%s: expected category %q is not a category", c.ID, c.Expected)
		}
	}
	for _, f := range []string{"playwright", "pytest", "junit", "cypress"} {
		if frameworks[f] < 8 {
			t.Errorf("the corpus has %d %s cases, want at least 8", frameworks[f], f)
		}
	}
	accuracy, misses := corpusAccuracy(cases)
	for _, m := range misses {
		t.Log("miss: " + m)
	}
	t.Logf("accuracy: %.1f%% of %d runs", accuracy, len(cases))
	if accuracy < minAccuracy {
		t.Fatalf("accuracy %.1f%% is under %.0f%%", accuracy, minAccuracy)
	}
}

// TestCorpusFindingsAreWellFormed checks every finding is usable as stored: a valid category,
// sentences, a confidence in 0..1, and one failure per failed or retried test.
func TestCorpusFindingsAreWellFormed(t *testing.T) {
	for _, c := range loadCorpus(t) {
		in := c.input()
		got := Analyse(in, c.History, nil)
		if !got.Category.Valid() || got.Summary == "" || got.RootCause == "" || got.SuggestedFix == "" {
			t.Errorf("%s: incomplete finding %+v", c.ID, got.Finding)
		}
		if got.Confidence < 0 || got.Confidence > 1 {
			t.Errorf("%s: confidence %v out of 0..1", c.ID, got.Confidence)
		}
		if want := countFailures(in.Tests); len(got.Failures) != want {
			t.Errorf("%s: %d failures listed, want %d", c.ID, len(got.Failures), want)
		}
		for _, f := range got.Failures {
			if len(f.Signature) != SignatureLen || f.Occurrences < 1 || f.FirstSeenTaskID != in.TaskID || f.Reason.Rule == "" {
				t.Errorf("%s: failure %+v", c.ID, f)
			}
		}
		if _, err := json.Marshal(got); err != nil {
			t.Errorf("%s: %v", c.ID, err)
		}
	}
}

func BenchmarkCorpusAccuracy(b *testing.B) {
	cases := loadCorpus(b)
	var accuracy float64
	for b.Loop() {
		accuracy, _ = corpusAccuracy(cases)
	}
	b.ReportMetric(accuracy, "accuracy-%")
}
