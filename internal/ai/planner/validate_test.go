package planner

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateAcceptsEveryBuiltInPlan(t *testing.T) {
	for _, cases := range [][]Case{selection(), thirty()} {
		for _, fw := range Frameworks {
			for _, p := range Patterns {
				md, err := Generate(cases, string(fw), string(p))
				if err != nil {
					t.Fatal(err)
				}
				if err := Validate(md, cases); err != nil {
					t.Errorf("%s/%s: %v", fw, p, err)
				}
			}
		}
	}
}

// modelPlan is a plan as a model might write it: numbered headings, IDs in code spans, a
// table without outer pipes, CRLF line ends, "## " lines inside its code blocks.
const modelPlan = "# Plan\r\n\r\n## 1. Executive Summary\r\nText.\r\n\r\n## Prerequisites and Environment Setup ##\r\n" +
	"```sh\r\n## not a heading\r\nnpm i\r\n```\r\n\r\n## **Folder and File Structure**\r\n~~~\r\n.\r\n~~~\r\n\r\n" +
	"## Test Coverage Map\r\n\r\nID | Suite | Test\r\n---|---|---\r\n`c1` | Checkout | Pay\r\n**a\\|2** | Account | Reset\r\n\r\n" +
	"## implementation notes:\r\n- Wait.\r\n\r\n## Master Coding Prompt\r\n\r\n````text\r\nWrite the tests.\r\n```json\r\n{}\r\n```\r\n````\r\n"

func TestValidateAcceptsAModelsPlan(t *testing.T) {
	if err := Validate(modelPlan, []Case{{ID: "c1"}, {ID: "a|2"}}); err != nil {
		t.Errorf("Validate refuses a complete plan: %v", err)
	}
}

func TestValidateRefuses(t *testing.T) {
	cases := selection()
	md, err := Generate(cases, "playwright", "Page Object")
	if err != nil {
		t.Fatal(err)
	}
	heading := func(s string) string { return "\n## " + s + "\n" }
	for name, tc := range map[string]struct {
		md, want string
	}{
		"no summary":            {strings.Replace(md, heading(SectionSummary), "\n## Summary\n", 1), `no section "Executive Summary"`},
		"no prerequisites":      {strings.Replace(md, heading(SectionPrerequisites), "\n### Prerequisites\n", 1), `no section "Prerequisites and Environment Setup"`},
		"no structure":          {strings.Replace(md, heading(SectionStructure), "\n", 1), `no section "Folder and File Structure"`},
		"no coverage map":       {strings.Replace(md, heading(SectionCoverage), "\n", 1), `no section "Test Coverage Map"`},
		"no notes":              {strings.Replace(md, heading(SectionNotes), "\n", 1), `no section "Implementation Notes"`},
		"no prompt":             {strings.Replace(md, heading(SectionPrompt), "\n", 1), `no section "Master Coding Prompt"`},
		"a heading in a fence":  {strings.Replace(md, heading(SectionNotes), "\n```\n## "+SectionNotes+"\n```\n", 1), `no section "Implementation Notes"`},
		"an indented heading":   {strings.Replace(md, heading(SectionNotes), "\n    ## "+SectionNotes+"\n", 1), `no section "Implementation Notes"`},
		"a test missing":        {strings.Replace(md, "| a1 |", "| a2 |", 1), `the coverage map has no row for "a1"`},
		"an ID only in a title": {strings.Replace(md, "| c2 | Checkout |", "| Checkout c2 | Checkout |", 1), `no row for "c2"`},
		"out of order": {
			strings.Replace(strings.Replace(md, heading(SectionSummary), heading("Swap"), 1), heading(SectionNotes), heading(SectionNotes)+heading(SectionSummary), 1),
			`section "Prerequisites and Environment Setup" is out of order`,
		},
		"a prompt without a block":  {md[:strings.LastIndex(md, "```text")], "the master coding prompt has no closed fenced block"},
		"a prompt block not closed": {strings.TrimSuffix(strings.TrimSuffix(md, "\n"), "```"), "the master coding prompt has no closed fenced block"},
		"empty":                     {"", `no section "Executive Summary"`},
	} {
		err := Validate(tc.md, cases)
		if !errors.Is(err, ErrInvalidPlan) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate = %v, want an error saying %q", name, err, tc.want)
		}
	}
}

func TestValidateNamesAtMostTenMissingTests(t *testing.T) {
	cases := thirty()
	md, _ := Generate(cases[:1], "jest", "Fluent")
	err := Validate(md, cases)
	if err == nil || !strings.Contains(err.Error(), `"tc-11" and 19 more`) || strings.Contains(err.Error(), `"tc-12"`) {
		t.Errorf("Validate = %v", err)
	}
}
