// Package junitxml writes a run's tests as a JUnit XML report: what CI systems read. The API
// serves a run's (a sharded run's merged) results so, and the CLI writes the same file beside a
// run it waited for.
package junitxml

import (
	"encoding/xml"
	"io"
	"strconv"
)

// Test is a run's test as the API's execution view lists it.
type Test struct {
	Name       string
	Suite      string
	Status     string // passed, failed, skipped, flaky
	DurationMs int64
	Error      string
	Retries    int
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	// A flaky test passed on a retry: it is a pass, and says so.
	SystemOut string `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr,omitempty"`
	Text    string `xml:",chardata"`
}

func seconds(ms int64) string { return strconv.FormatFloat(float64(ms)/1000, 'f', 3, 64) }

// Write writes a run's tests as a JUnit XML report, one testsuite per suite in the order the
// suites first appear: a failed test with its error (its first line as the message), a skipped
// one with its reason, a flaky one as a pass that says how many retries it took.
func Write(w io.Writer, run string, tests []Test) error {
	out := junitSuites{Name: run}
	index := map[string]int{}
	var total int64
	suiteMs := map[string]int64{}
	for _, t := range tests {
		i, ok := index[t.Suite]
		if !ok {
			i = len(out.Suites)
			index[t.Suite] = i
			out.Suites = append(out.Suites, junitSuite{Name: t.Suite})
		}
		s := &out.Suites[i]
		c := junitCase{Name: t.Name, ClassName: t.Suite, Time: seconds(t.DurationMs)}
		switch t.Status {
		case "failed":
			c.Failure = &junitMessage{Message: firstLine(t.Error), Text: t.Error}
			s.Failures++
			out.Failures++
		case "skipped":
			c.Skipped = &junitMessage{Message: firstLine(t.Error)}
			s.Skipped++
			out.Skipped++
		case "flaky":
			c.SystemOut = "passed after " + strconv.Itoa(t.Retries) + " retries"
		}
		s.Tests++
		out.Tests++
		suiteMs[t.Suite] += t.DurationMs
		total += t.DurationMs
		s.Cases = append(s.Cases, c)
	}
	for i := range out.Suites {
		out.Suites[i].Time = seconds(suiteMs[out.Suites[i].Name])
	}
	out.Time = seconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func firstLine(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}
