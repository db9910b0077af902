package report

import (
	"encoding/xml"
	"strings"

	"verdict/internal/domain"
)

// ParseNUnit reads NUnit 3's results file (TestResult.xml, what the NUnit console and
// `dotnet test --logger nunit` write): a <test-run> root of nested <test-suite> elements, and a
// <test-case> per test.
//
//   - result Passed passes a test; Failed fails it (an assertion, or label Error for an
//     exception, Invalid or Cancelled); Skipped (label Ignored, Explicit), Inconclusive and
//     Warning's neighbours skip it. Warning passes: the test ran and made its point.
//   - The error is the failure's message then its stack trace; a skipped test keeps its
//     reason.
//   - The suite is the test's class (classname), the name its own (a parameterised test's name
//     holds its arguments: "Add(1,2)").
//   - A test case repeated in the file (a [Retry] that logs each try) is one test with
//     attempts in order: a pass after a failure is flaky.
//
// ErrUnrecognized when the root is not <test-run>.
func ParseNUnit(data []byte) ([]domain.TestResult, error) { return parseNUnit(data, maxTests) }

// nunitCase is a <test-case>.
type nunitCase struct {
	Name      string `xml:"name,attr"`
	FullName  string `xml:"fullname,attr"`
	ClassName string `xml:"classname,attr"`
	Result    string `xml:"result,attr"`
	Label     string `xml:"label,attr"`
	Duration  string `xml:"duration,attr"`
	Message   string `xml:"failure>message"`
	Stack     string `xml:"failure>stack-trace"`
	Reason    string `xml:"reason>message"`
}

func parseNUnit(data []byte, limit int) ([]domain.TestResult, error) {
	dec := newXMLDecoder(data)
	tests := newByTest(limit)
	cases := 0
	err := eachElement(dec, "test-run", func(start xml.StartElement) error {
		if start.Name.Local != "test-case" {
			return nil
		}
		if cases == 4*limit {
			tests.limited = true
			return dec.Skip()
		}
		var c nunitCase
		if err := dec.decodeElement(&c, &start); err != nil {
			return err
		}
		cases++
		suite := c.ClassName
		if suite == "" {
			suite = strings.TrimSuffix(strings.TrimSuffix(c.FullName, c.Name), ".")
		}
		tests.add(suite, c.Name, nunitAttempt(c))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return tests.results()
}

// nunitAttempt is one <test-case>'s outcome.
func nunitAttempt(c nunitCase) attempt {
	a := attempt{durationMs: secondsToMillis(c.Duration)}
	switch c.Result {
	case "Passed", "Warning":
		a.status = domain.TestPassed
	case "Failed":
		a.status = domain.TestFailed
		// The stack's frames keep their indentation, as .NET prints them.
		a.err = errorText(strings.TrimSpace(c.Message) + "\n" + strings.Trim(c.Stack, "\r\n"))
	default: // Skipped, Inconclusive
		a.status = domain.TestSkipped
		a.err = errorText(c.Reason)
	}
	return a
}
