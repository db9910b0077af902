package report

import (
	"encoding/xml"
	"strconv"
	"strings"

	"verdict/internal/domain"
)

// ParseTRX reads a Visual Studio test results file (.trx), what `dotnet test --logger trx`
// writes for xUnit, NUnit and MSTest: a <TestRun> root whose <Results> hold one
// <UnitTestResult> per execution and whose <TestDefinitions> give each test's class.
//
//   - outcome Passed (or Warning, PassedButRunAborted) passes a test; NotExecuted, Inconclusive,
//     NotRunnable and Pending skip it; Failed, Error, Timeout, Aborted and the rest fail it.
//   - The error is <ErrorInfo>'s <Message> then its <StackTrace>.
//   - The suite is the test's class (TestMethod's className) and the name is the testName
//     without that class; several results of the same test are its attempts, in order (a pass
//     after a failure is flaky).
//
// ErrUnrecognized when the root is not <TestRun>.
func ParseTRX(data []byte) ([]domain.TestResult, error) { return parseTRX(data, maxTests) }

// trxResult is a <UnitTestResult>.
type trxResult struct {
	TestID   string `xml:"testId,attr"`
	TestName string `xml:"testName,attr"`
	Outcome  string `xml:"outcome,attr"`
	Duration string `xml:"duration,attr"`
	Message  string `xml:"Output>ErrorInfo>Message"`
	Stack    string `xml:"Output>ErrorInfo>StackTrace"`
}

// trxDefinition is a <UnitTest> of <TestDefinitions>.
type trxDefinition struct {
	ID     string `xml:"id,attr"`
	Method struct {
		ClassName string `xml:"className,attr"`
		Name      string `xml:"name,attr"`
	} `xml:"TestMethod"`
}

func parseTRX(data []byte, limit int) ([]domain.TestResult, error) {
	dec := newXMLDecoder(data)
	var (
		results []trxResult
		classes = map[string]trxDefinition{}
		limited bool
	)
	err := eachElement(dec, "TestRun", func(start xml.StartElement) error {
		switch start.Name.Local {
		case "UnitTestResult":
			if len(results) == limit {
				limited = true
				return dec.Skip()
			}
			var r trxResult
			if err := dec.decodeElement(&r, &start); err != nil {
				return err
			}
			results = append(results, r)
		case "UnitTest":
			var d trxDefinition
			if err := dec.decodeElement(&d, &start); err != nil {
				return err
			}
			if len(classes) < limit {
				classes[d.ID] = d
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// A test's results, in the order of its first one.
	var order []string
	attempts := map[string][]attempt{}
	names := map[string][2]string{}
	for _, r := range results {
		key := r.TestID
		if key == "" {
			key = r.TestName
		}
		if _, ok := attempts[key]; !ok {
			order = append(order, key)
			suite := classes[r.TestID].Method.ClassName
			name := r.TestName
			if suite != "" {
				name = strings.TrimPrefix(name, suite+".")
			}
			names[key] = [2]string{name, suite}
		}
		a := attempt{status: trxStatus(r.Outcome), durationMs: trxDuration(r.Duration)}
		if a.status == domain.TestFailed {
			a.err = errorText(strings.TrimSpace(r.Message + "\n" + r.Stack))
		}
		attempts[key] = append(attempts[key], a)
	}
	tests := make([]domain.TestResult, 0, len(order))
	for _, k := range order {
		tests = append(tests, settle(names[k][0], names[k][1], attempts[k]))
	}
	if limited {
		return tests, ErrLimit
	}
	return tests, nil
}

// trxStatus maps a TRX outcome to a test status.
func trxStatus(outcome string) domain.TestStatus {
	switch outcome {
	case "Passed", "Warning", "PassedButRunAborted":
		return domain.TestPassed
	case "NotExecuted", "Inconclusive", "NotRunnable", "Pending":
		return domain.TestSkipped
	}
	return domain.TestFailed
}

// trxDuration reads a TRX duration, "hh:mm:ss.fffffff", in milliseconds; 0 when it is not one.
func trxDuration(d string) int64 {
	parts := strings.Split(d, ":")
	if len(parts) != 3 {
		return 0
	}
	h, err1 := strconv.ParseFloat(parts[0], 64)
	m, err2 := strconv.ParseFloat(parts[1], 64)
	s, err3 := strconv.ParseFloat(parts[2], 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0
	}
	return millis((h*3600 + m*60 + s) * 1000)
}
