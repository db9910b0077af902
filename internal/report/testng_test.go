package report

import (
	"errors"
	"fmt"
	"testing"
	"testing/fstest"

	"verdict/internal/domain"
)

func TestParseTestNG(t *testing.T) {
	got, err := ParseTestNG(readTestdata(t, "testng/testng-results.xml"))
	if err != nil {
		t.Fatal(err)
	}
	parser, client := "com.acme.orders.OrderParserTest", "com.acme.orders.InventoryClientTest"
	checkResults(t, got, []want{
		// setUp is a configuration method, not a test.
		{parser, "parsesOrderId", domain.TestFailed, 14, 0, "java.lang.NumberFormatException: For input string: \"ORD-17\"\n\tat java.base/"},
		{parser, "totals(1, 2, 3)", domain.TestPassed, 2, 0, ""}, // a data provider's rows, by their parameters
		{parser, "totals(2, 2, 4)", domain.TestPassed, 1, 0, ""},
		// The retry analyzer's first run (retried="true") failed; the second passed.
		{client, "reservesStock", domain.TestFlaky, 40, 1, "java.net.SocketTimeoutException: Read timed out"},
		{client, "releasesStock", domain.TestSkipped, 0, 0, "Inventory sandbox is not configured"},
	})
	checkInvariants(t, got)
	for _, bad := range []string{`<testsuite name="x"/>`, `<test-run/>`, "not xml", ""} {
		if _, err := ParseTestNG([]byte(bad)); !errors.Is(err, ErrUnrecognized) {
			t.Errorf("ParseTestNG(%q) = %v, want ErrUnrecognized", bad, err)
		}
	}
}

func TestParseNUnit(t *testing.T) {
	got, err := ParseNUnit(readTestdata(t, "nunit/TestResult.xml"))
	if err != nil {
		t.Fatal(err)
	}
	parser, client := "Acme.Orders.Tests.OrderParserTests", "Acme.Orders.Tests.InventoryClientTests"
	checkResults(t, got, []want{
		{parser, "ParsesOrderId", domain.TestFailed, 31, 0,
			"System.FormatException : The input string 'ORD-17' was not in a correct format.\n   at System.Number."},
		{parser, "Totals(1,2,3)", domain.TestPassed, 2, 0, ""},
		{parser, "Totals(2,2,4)", domain.TestPassed, 1, 0, ""},
		{parser, "RejectsNegativeTotals", domain.TestSkipped, 0, 0, "waiting for ORD-211"},
		{client, "ReservesStock", domain.TestPassed, 340, 0, ""},
		{client, "ReleasesStock", domain.TestSkipped, 1, 0, "Inventory sandbox is not configured"},
	})
	checkInvariants(t, got)
	// A [Retry] that logs each try: the same case twice, failed then passed, is flaky.
	got, err = ParseNUnit([]byte(`<test-run><test-suite type="TestFixture"><test-case name="Syncs" classname="A.SyncTests" result="Failed" duration="0.5"><failure><message>timed out</message></failure></test-case>` +
		`<test-case name="Syncs" classname="A.SyncTests" result="Passed" duration="0.2"/></test-suite></test-run>`))
	if err != nil {
		t.Fatal(err)
	}
	checkResults(t, got, []want{{"A.SyncTests", "Syncs", domain.TestFlaky, 200, 1, "timed out"}})
	for _, bad := range []string{`<testsuite name="x"/>`, `<testng-results/>`, "not xml", ""} {
		if _, err := ParseNUnit([]byte(bad)); !errors.Is(err, ErrUnrecognized) {
			t.Errorf("ParseNUnit(%q) = %v, want ErrUnrecognized", bad, err)
		}
	}
}

// A framework's own results file answers for the run before the JUnit files written beside it
// (Surefire writes both for TestNG), and is found among .xml files by its root element.
func TestParseFSPrefersTheFrameworksOwnFile(t *testing.T) {
	junit := []byte(`<testsuite name="com.acme.orders.OrderParserTest"><testcase classname="com.acme.orders.OrderParserTest" name="parsesOrderId"><failure message="For input string"/></testcase></testsuite>`)
	for name, fsys := range map[string]fstest.MapFS{
		"testng": {
			"target/surefire-reports/TEST-com.acme.orders.OrderParserTest.xml": {Data: junit},
			"target/surefire-reports/testng-results.xml":                       {Data: readTestdata(t, "testng/testng-results.xml")},
		},
		"nunit": {
			"results/junit.xml":      {Data: junit},
			"results/TestResult.xml": {Data: readTestdata(t, "nunit/TestResult.xml")},
		},
	} {
		got, err := ReadFS(fsys)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int{"testng": 5, "nunit": 6}[name]
		if len(got.Tests) != want {
			t.Errorf("%s: %d tests, want the %d of its own file", name, len(got.Tests), want)
		}
		// The run says what it read: the format that answered and its files.
		wantRead := map[string]string{"testng": "TestNG [target/surefire-reports/testng-results.xml]",
			"nunit": "NUnit 3 [results/TestResult.xml]"}[name]
		if read := fmt.Sprint(got.Format, " ", got.Files); read != wantRead {
			t.Errorf("%s: read %s, want %s", name, read, wantRead)
		}
	}
}

func FuzzTestNG(f *testing.F) {
	f.Add(readTestdata(f, "testng/testng-results.xml"))
	f.Add([]byte(`<testng-results><suite><test><class name="a.B"><test-method name="x" status="SKIP" retried="true" duration-ms="1e309"/><test-method name="x" status="PASS"/></class></test></suite></testng-results>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ParseTestNG(data)
		if err != nil && got != nil && !errors.Is(err, ErrLimit) {
			t.Fatalf("results with error %v", err)
		}
		checkInvariants(t, got)
	})
}

func FuzzNUnit(f *testing.F) {
	f.Add(readTestdata(f, "nunit/TestResult.xml"))
	f.Add([]byte(`<test-run><test-case name="x" fullname="a.x" result="Failed" duration="-1"><failure><message>m</message></failure></test-case></test-run>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ParseNUnit(data)
		if err != nil && got != nil && !errors.Is(err, ErrLimit) {
			t.Fatalf("results with error %v", err)
		}
		checkInvariants(t, got)
	})
}
