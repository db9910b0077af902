package providers

import (
	"strings"
	"testing"
	"time"

	"verdict/internal/ai"
)

func TestNewDefaultsTimeout(t *testing.T) {
	if got := New(Config{}).cfg.Timeout; got != 60*time.Second {
		t.Errorf("default timeout = %v, want 60s", got)
	}
	if got := New(Config{Timeout: time.Second}).cfg.Timeout; got != time.Second {
		t.Errorf("timeout = %v, want 1s", got)
	}
	if got := New(Config{}).cfg.PlanTimeout; got != 3*time.Minute {
		t.Errorf("default plan timeout = %v, want 3m", got)
	}
}

func TestInstructionsNameEveryCategory(t *testing.T) {
	for _, c := range ai.Categories {
		if categoryMeaning[c] == "" {
			t.Errorf("category %q has no meaning for the model", c)
		}
		if !strings.Contains(instructions, `"`+string(c)+`"`) {
			t.Errorf("instructions do not name category %q", c)
		}
	}
	for _, want := range []string{"untrusted", "ignore previous instructions", "category", "summary", "rootCause", "suggestedFix", "confidence"} {
		if !strings.Contains(instructions, want) {
			t.Errorf("instructions do not mention %q", want)
		}
	}
}

func TestParseFinding(t *testing.T) {
	good := `{"category":"test_bug","summary":"The login test failed.","rootCause":"The selector #login no longer exists.","suggestedFix":"Use the data-test id.","confidence":0.8}`
	f, err := parseFinding("\n" + good + "\n")
	want := ai.Finding{Category: ai.TestBug, Summary: "The login test failed.", RootCause: "The selector #login no longer exists.", SuggestedFix: "Use the data-test id.", Confidence: 0.8}
	if err != nil || f != want {
		t.Fatalf("parseFinding(good) = %+v, %v; want %+v", f, err, want)
	}
	for _, c := range []float64{0, 1} {
		s := strings.Replace(good, "0.8", map[float64]string{0: "0", 1: "1"}[c], 1)
		if f, err := parseFinding(s); err != nil || f.Confidence != c {
			t.Errorf("confidence %v refused: %v", c, err)
		}
	}

	for name, text := range map[string]string{
		"empty":           "",
		"blank":           "  \n",
		"not JSON":        "The test failed because of a bad selector.",
		"markdown fence":  "```json\n" + good + "\n```",
		"array":           "[" + good + "]",
		"wrong category":  strings.Replace(good, "test_bug", "network", 1),
		"confidence 2.5":  strings.Replace(good, "0.8", "2.5", 1),
		"confidence -0.1": strings.Replace(good, "0.8", "-0.1", 1),
		"confidence text": strings.Replace(good, "0.8", `"high"`, 1),
		"missing field":   `{"category":"test_bug","summary":"s","rootCause":"r","confidence":0.5}`,
		"null field":      `{"category":"test_bug","summary":"s","rootCause":"r","suggestedFix":null,"confidence":0.5}`,
		"empty summary":   strings.Replace(good, "The login test failed.", " ", 1),
		"extra field":     strings.Replace(good, `"confidence"`, `"severity":"high","confidence"`, 1),
		"two objects":     good + good,
		"trailing text":   good + " done",
		"huge field":      strings.Replace(good, "Use the data-test id.", strings.Repeat("x", maxFieldBytes+1), 1),
		"truncated":       good[:len(good)-10],
	} {
		if f, err := parseFinding(text); err == nil {
			t.Errorf("%s: parseFinding accepted %q as %+v", name, text, f)
		}
	}
}

func TestFindingSchema(t *testing.T) {
	for _, bounds := range []bool{true, false} {
		s := findingSchema(bounds)
		props := s["properties"].(map[string]any)
		req := s["required"].([]string)
		if len(props) != 5 || len(req) != 5 {
			t.Fatalf("schema has %d properties and %d required, want 5 and 5", len(props), len(req))
		}
		for _, name := range req {
			if _, ok := props[name]; !ok {
				t.Errorf("required %q is not a property", name)
			}
		}
		enum := props["category"].(map[string]any)["enum"].([]string)
		if len(enum) != len(ai.Categories) {
			t.Errorf("category enum %v, want %v", enum, ai.Categories)
		}
		if s["additionalProperties"] != false {
			t.Error("additionalProperties is not false")
		}
		_, hasMin := props["confidence"].(map[string]any)["minimum"]
		if hasMin != bounds {
			t.Errorf("bounds %v: confidence has minimum %v", bounds, hasMin)
		}
	}
}
