package planner

import (
	"strings"
	"testing"
)

// FuzzGenerate: whatever people write in a case, every plan keeps its six sections and no
// other, a coverage map of one well-formed row per case, a prompt whose JSON carries the
// cases as written, passes Validate and comes out the same twice.
func FuzzGenerate(f *testing.F) {
	f.Add("Pay | with card", "Checkout", "smoke", "User is logged in", "Open /checkout\n## Step", "The card | is shown", "c-1", uint8(0))
	f.Add("```\n# H1\n<script>x</script>", "a\\|b", "p0|x", "- a\n- b\n1. c", "````", "\\", " id with space ", uint8(7))
	f.Add("", "", "", "", "", "", "x", uint8(29))
	f.Add("\xff\xfe\x00\u2028title", "日本語", "\t", "\r\n\r\n", "*_[]<>~&", "|||", "\\|", uint8(13))
	f.Fuzz(func(t *testing.T, title, suite, tag, pre, action, expected, id string, shape uint8) {
		if strings.TrimSpace(id) == "" {
			id = "x"
		}
		fw := Frameworks[int(shape)%len(Frameworks)]
		pattern := Patterns[int(shape/8)%len(Patterns)]
		cases := []Case{
			{ID: id, Title: title, Suite: suite, Tags: []string{tag}, Priority: tag, Preconditions: pre,
				Steps: []Step{{Action: action, Expected: expected}, {Action: expected, Expected: action}}},
			{ID: id + "-2", Title: action, Suite: title, Preconditions: action, Steps: []Step{{Action: pre}}},
			{ID: "fixed", Title: "Pay with a saved card", Suite: suite},
		}
		md, err := Generate(cases, string(fw), string(pattern))
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		checkPlan(t, md, cases, fw)
		if err := Validate(md, cases); err != nil {
			t.Fatalf("Validate refuses the built-in plan: %v", err)
		}
		for _, l := range readLines(md) {
			if !l.inFence && rawHTML(l.text) {
				t.Fatalf("raw HTML outside code: %q", l.text)
			}
		}
		if again, _ := Generate(cases, string(fw), string(pattern)); again != md {
			t.Fatal("the same cases give another plan")
		}
		if _, data, err := ModelInput(cases, string(fw), string(pattern)); err != nil || len(data) > MaxModelDataBytes {
			t.Fatalf("ModelInput: %d bytes, %v", len(data), err)
		}
		Discover(cases, History{Runs: 3, Tests: map[string]int{title: 1}, Suites: map[string]int{suite: 2}}, Options{Suite: suite, Tag: tag})
	})
}
