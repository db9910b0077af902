package report

import (
	"encoding/xml"
	"strconv"
	"strings"

	"verdict/internal/domain"
)

// ParseTestNG reads TestNG's own results file, testng-results.xml (what TestNG writes beside
// Surefire's JUnit files): a <testng-results> root, <suite>, <test> and <class> elements, and
// a <test-method> per run of a method.
//
//   - status PASS passes a test, FAIL fails it, SKIP skips it; configuration methods
//     (is-config="true": @BeforeMethod and the like) are not tests and are left out.
//   - A method run more than once (a retry analyzer, whose earlier runs TestNG marks
//     retried="true", or a data provider's rows without parameters to tell them apart) is one
//     test with attempts in order: a pass after a failure is flaky. Rows of a data provider are
//     told apart by their parameters, which name them: "add(1, 2)".
//   - A failure keeps the exception's class, message and (bounded) stack trace, as Java users
//     read them.
//   - The suite is the test class.
//
// ErrUnrecognized when the root is not <testng-results>.
func ParseTestNG(data []byte) ([]domain.TestResult, error) { return parseTestNG(data, maxTests) }

// testngMethod is a <test-method>.
type testngMethod struct {
	Name     string `xml:"name,attr"`
	Status   string `xml:"status,attr"`
	Config   bool   `xml:"is-config,attr"`
	Retried  bool   `xml:"retried,attr"`
	Duration string `xml:"duration-ms,attr"`
	Params   []struct {
		Value string `xml:"value"`
	} `xml:"params>param"`
	Exception struct {
		Class   string `xml:"class,attr"`
		Message string `xml:"message"`
		Stack   string `xml:"full-stacktrace"`
	} `xml:"exception"`
}

func parseTestNG(data []byte, limit int) ([]domain.TestResult, error) {
	dec := newXMLDecoder(data)
	tests := newByTest(limit)
	class, methods := "", 0
	err := eachElement(dec, "testng-results", func(start xml.StartElement) error {
		switch start.Name.Local {
		case "class":
			class = attr(start, "name")
		case "test-method":
			if methods == 4*limit { // attempts too: a retried test has several
				tests.limited = true
				return dec.Skip()
			}
			var m testngMethod
			if err := dec.decodeElement(&m, &start); err != nil {
				return err
			}
			methods++
			if !m.Config {
				tests.add(class, testngName(m), testngAttempt(m))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return tests.results()
}

// testngName is the method's name, with a data provider's parameters when it has them.
func testngName(m testngMethod) string {
	if len(m.Params) == 0 {
		return m.Name
	}
	name := m.Name + "("
	for i, p := range m.Params {
		if i > 0 {
			name += ", "
		}
		name += strings.TrimSpace(p.Value)
	}
	return name + ")"
}

// testngAttempt is one run of a method. A run TestNG retried (retried="true", status SKIP) is
// a failed attempt: the retry analyzer ran it again because it failed.
func testngAttempt(m testngMethod) attempt {
	a := attempt{durationMs: millisOf(m.Duration)}
	switch {
	case m.Status == "PASS":
		a.status = domain.TestPassed
	case m.Status == "FAIL" || m.Retried:
		a.status = domain.TestFailed
		a.err = junitOutcome{Type: m.Exception.Class, Message: m.Exception.Message, StackTrace: m.Exception.Stack}.text()
	default:
		a.status = domain.TestSkipped
		a.err = errorText(m.Exception.Message)
	}
	return a
}

// millisOf parses a count of milliseconds.
func millisOf(s string) int64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0
	}
	return millis(f)
}
