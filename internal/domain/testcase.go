package domain

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// A manual test case is a test a person carries out by hand, kept per project: what the
// automation planner reads to propose which tests to automate. Within a project a test case is
// known by its suite and title (compared exactly, after trimming), which is how an import
// recognises a test case it already holds.

// Bounds of a test case's fields, in characters. They keep one test case small enough to list
// in pages of 200 and to hand to a model, while leaving room for what test-management tools
// export.
const (
	MaxTestCaseTitle = 300  // the title: one line, required
	MaxTestCaseSuite = 200  // the suite (a test-management tool's section): one line, may be empty
	MaxTestCaseTags  = 50   // tags per test case
	MaxTestCaseTag   = 50   // one tag: one line, no comma
	MaxTestCaseSteps = 200  // steps per test case
	MaxTestCaseText  = 4000 // the preconditions, and each step's action and expected result
)

// Priority is a test case's priority; empty when it has none.
type Priority string

const (
	PriorityCritical Priority = "critical"
	PriorityHigh     Priority = "high"
	PriorityMedium   Priority = "medium"
	PriorityLow      Priority = "low"
)

// Priorities are the priorities a test case may have, highest first.
var Priorities = []Priority{PriorityCritical, PriorityHigh, PriorityMedium, PriorityLow}

// ValidPriority reports whether p is one of Priorities or empty.
func ValidPriority(p Priority) bool {
	switch p {
	case "", PriorityCritical, PriorityHigh, PriorityMedium, PriorityLow:
		return true
	}
	return false
}

// TestStep is one step of a test case: what to do, and what should then be seen.
type TestStep struct {
	Action   string `json:"action"`
	Expected string `json:"expected"`
}

// TestCase is a manual test case of a project.
type TestCase struct {
	ID             string
	OrganizationID string
	ProjectID      string
	Title          string
	Suite          string
	Tags           []string // in the order given, without repeats
	Priority       Priority
	Preconditions  string
	Steps          []TestStep
	CreatedBy      string // the user who created it (or first imported it)
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// Normalize brings a test case's fields to their stored form and checks them, returning a
// 400 Validation error naming the first rule broken:
//   - title, suite and tags are trimmed, and must be one line of visible characters (no
//     controls, bidi or invisible formatting characters); the title is required (at most
//     MaxTestCaseTitle characters), the suite may be empty (at most MaxTestCaseSuite);
//   - tags: empty ones are dropped and repeats kept once (tags compare exactly); at most
//     MaxTestCaseTags of at most MaxTestCaseTag characters each, without commas (a list of
//     tags is written comma-separated in a CSV file);
//   - the priority is empty or one of Priorities;
//   - preconditions and each step's action and expected result are text of several lines
//     (CR LF and CR become LF; tabs allowed) of at most MaxTestCaseText characters, trimmed;
//   - at most MaxTestCaseSteps steps, none with both action and expected result empty.
//
// Tags and Steps are never nil afterwards.
func (c *TestCase) Normalize() error {
	c.Title = strings.TrimSpace(c.Title)
	if c.Title == "" {
		return invalid("title is required")
	}
	if err := checkLine("title", c.Title, MaxTestCaseTitle); err != nil {
		return err
	}
	c.Suite = strings.TrimSpace(c.Suite)
	if err := checkLine("suite", c.Suite, MaxTestCaseSuite); err != nil {
		return err
	}
	tags := make([]string, 0, len(c.Tags))
	for _, t := range c.Tags {
		t = strings.TrimSpace(t)
		if t == "" || slices.Contains(tags, t) {
			continue
		}
		if err := checkLine("tag "+quoteText(t), t, MaxTestCaseTag); err != nil {
			return err
		}
		if strings.Contains(t, ",") {
			return invalid("tag " + quoteText(t) + " must not contain a comma")
		}
		tags = append(tags, t)
	}
	if len(tags) > MaxTestCaseTags {
		return invalid(fmt.Sprintf("at most %d tags", MaxTestCaseTags))
	}
	c.Tags = tags
	if !ValidPriority(c.Priority) {
		return invalid("priority must be critical, high, medium or low")
	}
	var err error
	if c.Preconditions, err = checkText("preconditions", c.Preconditions); err != nil {
		return err
	}
	if len(c.Steps) > MaxTestCaseSteps {
		return invalid(fmt.Sprintf("at most %d steps", MaxTestCaseSteps))
	}
	steps := make([]TestStep, len(c.Steps))
	for i, s := range c.Steps {
		name := fmt.Sprintf("step %d", i+1)
		if s.Action, err = checkText(name+" action", s.Action); err != nil {
			return err
		}
		if s.Expected, err = checkText(name+" expected result", s.Expected); err != nil {
			return err
		}
		if s.Action == "" && s.Expected == "" {
			return invalid(name + " is empty: give an action or an expected result")
		}
		steps[i] = s
	}
	c.Steps = steps
	return nil
}

func invalid(msg string) *Error { return BadRequest("Validation error", msg) }

// checkLine checks a trimmed one-line field of at most max characters (empty allowed).
func checkLine(field, s string, max int) error {
	if utf8.RuneCountInString(s) > max {
		return invalid(fmt.Sprintf("%s must be at most %d characters", field, max))
	}
	if s != "" && !visibleLine(s, 1, max) {
		return invalid(field + " must be one line of visible characters, without control, invisible or text-direction characters")
	}
	return nil
}

// checkText normalises and checks a field of several lines.
func checkText(field, s string) (string, error) {
	s = strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n"))
	if utf8.RuneCountInString(s) > MaxTestCaseText {
		return "", invalid(fmt.Sprintf("%s must be at most %d characters", field, MaxTestCaseText))
	}
	if !visibleText(s) {
		return "", invalid(field + " must be visible text (line breaks and tabs allowed), without control, invisible or text-direction characters")
	}
	return s, nil
}

// quoteText quotes a user's text for a message, cut to 40 characters and made printable.
func quoteText(s string) string {
	if utf8.RuneCountInString(s) > 40 {
		s = string([]rune(s)[:40]) + "…"
	}
	return fmt.Sprintf("%q", s)
}
