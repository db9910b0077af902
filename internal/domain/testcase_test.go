package domain

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestTestCaseNormalize(t *testing.T) {
	c := TestCase{Title: "  Pay by card\t", Suite: " Checkout ", Tags: []string{" smoke", "", "smoke", "Smoke ", "pay"},
		Priority: PriorityHigh, Preconditions: "\r\nA cart\r\nA card\r",
		Steps: []TestStep{{Action: " Open\rthe cart ", Expected: "One item\r\n"}, {Expected: "Paid"}}}
	if err := c.Normalize(); err != nil {
		t.Fatal(err)
	}
	want := TestCase{Title: "Pay by card", Suite: "Checkout", Tags: []string{"smoke", "Smoke", "pay"}, Priority: PriorityHigh,
		Preconditions: "A cart\nA card", Steps: []TestStep{{Action: "Open\nthe cart", Expected: "One item"}, {Expected: "Paid"}}}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("normalised:\n got  %#v\n want %#v", c, want)
	}
	bare := TestCase{Title: "x"}
	if err := bare.Normalize(); err != nil || bare.Tags == nil || bare.Steps == nil {
		t.Fatalf("a bare test case: %v, tags %#v, steps %#v", err, bare.Tags, bare.Steps)
	}

	many := func(n int, s string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = s + strconv.Itoa(i)
		}
		return out
	}
	for _, c := range []struct {
		name string
		c    TestCase
		msg  string
	}{
		{"no title", TestCase{Title: " \t "}, "title is required"},
		{"a title of 301 characters", TestCase{Title: strings.Repeat("é", 301)}, "title must be at most 300 characters"},
		{"a title of two lines", TestCase{Title: "a\nb"}, "title must be one line of visible characters, without control, invisible or text-direction characters"},
		{"a title with a bidi override", TestCase{Title: "Eve \u202eNIMDA"}, "title must be one line of visible characters, without control, invisible or text-direction characters"},
		{"a title not UTF-8", TestCase{Title: "Caf\xe9"}, "title must be one line of visible characters, without control, invisible or text-direction characters"},
		{"a suite of 201 characters", TestCase{Title: "t", Suite: strings.Repeat("s", 201)}, "suite must be at most 200 characters"},
		{"51 tags", TestCase{Title: "t", Tags: many(51, "t")}, "at most 50 tags"},
		{"a tag of 51 characters", TestCase{Title: "t", Tags: []string{strings.Repeat("t", 51)}}, `tag "` + strings.Repeat("t", 40) + `…" must be at most 50 characters`},
		{"a tag with a comma", TestCase{Title: "t", Tags: []string{"a,b"}}, `tag "a,b" must not contain a comma`},
		{"a tag with a zero-width space", TestCase{Title: "t", Tags: []string{"a\u200bb"}}, `tag "a\u200bb" must be one line of visible characters, without control, invisible or text-direction characters`},
		{"an unknown priority", TestCase{Title: "t", Priority: "urgent"}, "priority must be critical, high, medium or low"},
		{"long preconditions", TestCase{Title: "t", Preconditions: strings.Repeat("p", 4001)}, "preconditions must be at most 4000 characters"},
		{"preconditions with a control character", TestCase{Title: "t", Preconditions: "a\x07b"}, "preconditions must be visible text (line breaks and tabs allowed), without control, invisible or text-direction characters"},
		{"201 steps", TestCase{Title: "t", Steps: make([]TestStep, 201)}, "at most 200 steps"},
		{"an empty step", TestCase{Title: "t", Steps: []TestStep{{Action: "a"}, {Action: " ", Expected: "\n"}}}, "step 2 is empty: give an action or an expected result"},
		{"a long expected result", TestCase{Title: "t", Steps: []TestStep{{Expected: strings.Repeat("e", 4001)}}}, "step 1 expected result must be at most 4000 characters"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.c.Normalize()
			var de *Error
			if !errors.As(err, &de) || de.Kind != KindInvalid || de.Code != "Validation error" || de.Message != c.msg {
				t.Fatalf("got %v, want 400 Validation error: %s", err, c.msg)
			}
		})
	}
	limits := TestCase{Title: strings.Repeat("é", 300), Suite: strings.Repeat("s", 200), Tags: many(50, "t"),
		Preconditions: strings.Repeat("p", 4000), Steps: make([]TestStep, 200)}
	for i := range limits.Steps {
		limits.Steps[i] = TestStep{Action: strings.Repeat("a", 4000), Expected: strings.Repeat("e", 4000)}
	}
	limits.Tags[49] = strings.Repeat("t", 50)
	if err := limits.Normalize(); err != nil {
		t.Fatalf("a test case at every bound: %v", err)
	}
}
