package planner

import (
	"encoding/json"
	"errors"
	"strings"
)

// MaxModelDataBytes bounds the data ModelInput makes, below what the model providers accept.
const MaxModelDataBytes = 448 << 10

// modelInstructions are the fixed instructions a model writes a plan under; the selected
// tests reach it only as data.
var modelInstructions = func() string {
	var b strings.Builder
	b.WriteString(`You write a test automation strategy document in Markdown for the engineers who will automate a project's manual test cases. The input names the framework, its language, the design pattern, the files of the project and the selected tests with their risk, target file, test name, preconditions, fixtures and steps.

Start with one level-one heading naming the framework and the design pattern. Then write exactly these six sections, in this order, each under a level-two heading ("## ") with exactly this title and no other level-two headings:
`)
	what := map[string]string{
		SectionSummary:       "how many tests from which suites, the framework, language and pattern, the tests by risk level, the risky areas (payments, security, data) and the order to automate the suites in, riskiest first.",
		SectionPrerequisites: "the runtime, the install commands, the environment variables (BASE_URL is the application's address; accounts and keys come from environment variables, never from the code) and how the suite runs in a container: its entrypoint gets the folder to run as its first argument (all, or nothing, runs everything) and reports go under /app/reports.",
		SectionStructure:     "the folder tree in a fenced code block, with every file of the input's files (add files only where the pattern needs them, rename none), then one line on each file's purpose.",
		SectionCoverage:      "one Markdown table with the columns ID, Suite, Test, Priority, Risk, Target, Notes and one row for every test of the input: its id exactly as given, alone in the first column, its suite, title, priority, risk, target file and notes (the waits, data and fixtures it needs). Write a | inside a cell as \\| and keep each row on one line.",
		SectionNotes:         "drawn from the steps: how to wait for navigation and asynchronous results in this framework, the test data the steps need and how to create it, a fixture for each precondition, the handling of payments, security and data tests, and the gaps in the cases (tests without steps, steps without expected results).",
		SectionPrompt:        "one prompt for a coding assistant, in one fenced code block, that names the files to write and the rules to follow (the pattern, the waits, the environment variables) and carries the selected tests with their steps and expected results as JSON.",
	}
	for i, s := range Sections {
		b.WriteString(string(rune('1'+i)) + ". " + s + ": " + what[s] + "\n")
	}
	b.WriteString(`
Use only the input: do not invent tests, steps or expected results, and keep every test's id, target file and test name as given.`)
	return b.String()
}()

// modelData is the JSON document a model gets: the plan Generate would write from, as data.
type modelData struct {
	Framework      string         `json:"framework"`
	FrameworkTitle string         `json:"frameworkTitle"`
	Language       string         `json:"language"`
	DesignPattern  string         `json:"designPattern"`
	Sections       []string       `json:"sections"`
	Files          []modelFile    `json:"files"`
	Tests          []promptTest   `json:"tests"`
	Omitted        map[string]int `json:"omittedSteps,omitempty"` // test id → steps left out
}

type modelFile struct {
	Path    string `json:"path"`
	Purpose string `json:"purpose"`
}

// shrinkSteps are the bounds ModelInput tries in turn until the data fits: the runes of each
// text of a test, and its steps.
var shrinkSteps = []struct{ runes, steps int }{{0, 0}, {4000, 200}, {1000, 100}, {300, 50}, {100, 20}, {60, 10}}

// ModelInput is what a hosted model is asked with to write the plan Generate writes: fixed
// instructions (no text of the cases in them) and the data, a JSON document of the framework,
// the pattern, the files and the selected cases with their risks, targets and steps. Long
// texts and long lists of steps are cut until the data is within MaxModelDataBytes. It
// refuses what Generate refuses, with the same errors. Check the model's answer with
// Validate.
func ModelInput(cases []Case, framework, designPattern string) (instructions string, data json.RawMessage, err error) {
	p, err := newPlan(cases, framework, designPattern)
	if err != nil {
		return "", nil, err
	}
	doc := modelData{
		Framework: string(p.fw), FrameworkTitle: p.st.title, Language: p.st.language, DesignPattern: string(p.pattern),
		Sections: Sections,
	}
	for _, f := range p.files {
		doc.Files = append(doc.Files, modelFile{f.path, p.describe(f, plain)})
	}
	full := p.promptDocument().Tests
	for _, bound := range shrinkSteps {
		doc.Tests, doc.Omitted = shrink(full, bound.runes, bound.steps)
		if textBytes(doc.Tests) > MaxModelDataBytes {
			continue // the JSON is longer still: no need to make it
		}
		data, err := json.Marshal(doc)
		if err != nil {
			return "", nil, err
		}
		if len(data) <= MaxModelDataBytes {
			return modelInstructions, data, nil
		}
	}
	return "", nil, errors.New("planner: the selected test cases are too large for a model")
}

// textBytes is the length of the texts of tests: less than their JSON.
func textBytes(tests []promptTest) int {
	n := 0
	for _, t := range tests {
		n += len(t.Title) + len(t.Preconditions)
		for _, s := range t.Steps {
			n += len(s.Action) + len(s.Expected)
		}
	}
	return n
}

// shrink cuts every text of tests to runes and their steps to steps (0: no bound).
func shrink(tests []promptTest, runes, steps int) ([]promptTest, map[string]int) {
	if runes == 0 {
		return tests, nil
	}
	cut := func(s string) string { return clip(strings.ToValidUTF8(s, "\uFFFD"), runes) }
	var omitted map[string]int
	out := make([]promptTest, len(tests))
	for i, t := range tests {
		t.Title, t.Suite, t.Preconditions = cut(t.Title), cut(t.Suite), cut(t.Preconditions)
		t.TestName = cut(t.TestName)
		tags := make([]string, len(t.Tags))
		for j, tag := range t.Tags {
			tags[j] = cut(tag)
		}
		t.Tags = tags
		n := min(len(t.Steps), steps)
		if n < len(t.Steps) {
			if omitted == nil {
				omitted = map[string]int{}
			}
			omitted[t.ID] = len(t.Steps) - n
		}
		s := make([]Step, n)
		for j := range n {
			s[j] = Step{Action: cut(t.Steps[j].Action), Expected: cut(t.Steps[j].Expected)}
		}
		t.Steps = s
		out[i] = t
	}
	return out, omitted
}
