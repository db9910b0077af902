package report

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"verdict/internal/domain"
)

const (
	passed  = domain.TestPassed
	failed  = domain.TestFailed
	skipped = domain.TestSkipped
	flaky   = domain.TestFlaky
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The samples in testdata/junit: pytest.xml and playwright.xml were written by pytest 7 and
// Playwright 1.65 from small suites; the others follow the files those tools write.
func TestParseJUnitSamples(t *testing.T) {
	const pay = "com.acme.checkout.PaymentServiceTest"
	cases := []struct {
		file  string
		wants []want
	}{
		{"pytest.xml", []want{
			{"tests.test_orders.TestOrders", "test_total_includes_tax", passed, 126, 0, ""},
			{"tests.test_orders.TestOrders", "test_discount_applied", failed, 1, 0, "AssertionError: discount missing"},
			{"tests.test_orders.TestOrders", "test_saves_order", failed, 0, 0, `failed on setup with "ConnectionError: could not connect`},
			{"tests.test_orders", "test_quantity[1-True]", passed, 0, 0, ""},
			{"tests.test_orders", "test_quantity[0-False]", passed, 0, 0, ""},
			{"tests.test_orders", "test_quantity[-1-False]", passed, 21, 0, ""},
			{"tests.test_orders", "test_refund", skipped, 0, 0, "payments sandbox is down"}, // the skip's reason
			{"tests.test_orders", "test_rounding", skipped, 0, 0, "rounding bug #412"},      // xfail
			{"tests.test_orders", "test_prints", passed, 0, 0, ""},
		}},
		{"TEST-com.acme.checkout.PaymentServiceTest.xml", []want{
			{pay, "chargesCard", passed, 412, 0, ""},
			{pay, "retriesGatewayTimeout", flaky, 1203, 1, "org.opentest4j.AssertionFailedError: expected: <200> but was: <503>\n\tat org.junit"},
			{pay, "refundsPartially", failed, 803, 2, "org.opentest4j.AssertionFailedError: expected: <40.00> but was: <39.99>\n\tat com.acme"},
			{pay, "connectsToLedger", flaky, 257, 2, "java.net.ConnectException: Connection refused"},
			{pay, "supportsCrypto", skipped, 0, 0, "not supported in the EU region"},
			{pay, "voidsAuthorization", failed, 21, 0, `java.lang.NullPointerException: Cannot invoke "com.acme.ledger.Entry.amount()"`},
		}},
		{"TEST-com.acme.LegacyExportTest.xml", []want{
			{"com.acme.LegacyExportTest", "exportsFullCatalogue", passed, 1_204_500, 0, ""},
		}},
		{"gradle-test-retry.xml", []want{
			{"com.acme.inventory.StockServiceTest", "reservesStock()", flaky, 498, 1, "org.opentest4j.AssertionFailedError: expected: <5>"},
			{"com.acme.inventory.StockServiceTest", "releasesStock()", passed, 101, 0, ""},
		}},
		{"phpunit.xml", []want{
			{`Tests\Unit\CartTest`, "testAddsItem", passed, 4, 0, ""},
			{`Tests\Unit\CartTest::testRejectsQuantity`, `testRejectsQuantity with data set "zero"`, passed, 3, 0, ""},
			{`Tests\Unit\CartTest::testRejectsQuantity`, `testRejectsQuantity with data set "negative"`, failed, 4, 0,
				"Tests\\Unit\\CartTest::testRejectsQuantity with data set \"negative\" (-1)\nFailed asserting that exception"},
			{`Tests\Unit\CartTest`, "testAppliesCoupon", skipped, 2, 0, ""},
		}},
		{"jest-junit.xml", []want{
			{"src/cart.test.ts", "Cart adds items", passed, 4, 0, ""},
			{"src/cart.test.ts", "Cart computes totals", failed, 6, 0, "Error: expect(received).toBe(expected) // Object.is equality\n\nExpected: 30"},
			{"src/cart.test.ts", "Cart empties", passed, 1, 0, ""}, // raw escape codes in its system-out
		}},
		// Playwright's JUnit reporter keeps neither retries nor flakiness: "retries the gateway"
		// failed once and is a plain pass here, which is why ParseDir prefers its JSON report.
		{"playwright.xml", []want{
			{"checkout.spec.ts", "Checkout › adds an item to the cart", passed, 6, 0, ""},
			{"checkout.spec.ts", "Checkout › payment › rejects an expired card", failed, 35, 0, "expect(received).toEqual(expected) // deep equality"},
			{"checkout.spec.ts", "Checkout › payment › retries the gateway", passed, 14, 0, ""},
			{"checkout.spec.ts", "Checkout › applies a coupon", skipped, 0, 0, ""},
			{"checkout.spec.ts", "Checkout › known bug: totals round down", passed, 5, 0, ""},
			{"login.spec.ts", "logs in with a valid password", passed, 22, 0, ""},
			{"login.spec.ts", "locks the account after five failures", failed, 908, 0, "Test timeout of 300ms exceeded."},
			{"checkout.spec.ts", "Checkout › adds an item to the cart", passed, 19, 0, ""},
			{"checkout.spec.ts", "Checkout › payment › rejects an expired card", failed, 66, 0, "expect(received).toEqual(expected)"},
			{"checkout.spec.ts", "Checkout › payment › retries the gateway", passed, 72, 0, ""},
			{"checkout.spec.ts", "Checkout › applies a coupon", skipped, 0, 0, ""},
			{"checkout.spec.ts", "Checkout › known bug: totals round down", passed, 35, 0, ""},
			{"login.spec.ts", "logs in with a valid password", passed, 61, 0, ""},
			{"login.spec.ts", "locks the account after five failures", failed, 971, 0, "Test timeout of 300ms exceeded."},
		}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			got, err := ParseJUnit(readTestdata(t, "junit/"+c.file))
			if err != nil {
				t.Fatal(err)
			}
			checkResults(t, got, c.wants)
			checkInvariants(t, got)
		})
	}
}

func TestParseJUnitShapes(t *testing.T) {
	t.Run("other roots are not JUnit", func(t *testing.T) {
		for _, doc := range []string{
			``, `not xml`, `<?xml version="1.0"?><project><modelVersion>4.0.0</modelVersion></project>`,
			`<testng-results><suite name="x"/></testng-results>`, `<html><body>report</body></html>`,
			`<!-- comment --><svg xmlns="http://www.w3.org/2000/svg"/>`,
		} {
			if _, err := ParseJUnit([]byte(doc)); !errors.Is(err, ErrUnrecognized) {
				t.Errorf("%q: err = %v, want ErrUnrecognized", doc, err)
			}
		}
	})
	t.Run("a broken JUnit file is an error, not a skip", func(t *testing.T) {
		got, err := ParseJUnit([]byte(`<testsuite name="s"><testcase name="a"/><testcase name="b">`))
		if err == nil || errors.Is(err, ErrUnrecognized) || got != nil {
			t.Fatalf("got %v, %v", got, err)
		}
	})
	t.Run("empty suites have no tests", func(t *testing.T) {
		got, err := ParseJUnit([]byte(`<testsuites/>`))
		if err != nil || len(got) != 0 {
			t.Fatalf("got %v, %v", got, err)
		}
	})
	t.Run("a failure outranks a skip and keeps the first message", func(t *testing.T) {
		got, err := ParseJUnit([]byte(`<testsuite><testcase name="t"><skipped/><failure message="first"/><error message="second"/></testcase></testsuite>`))
		if err != nil {
			t.Fatal(err)
		}
		checkResults(t, got, []want{{"", "t", failed, 0, 0, "first"}})
	})
	t.Run("the same name in another suite is another test", func(t *testing.T) {
		// Playwright writes one <testsuite> per file and project, with the same test names.
		got, err := ParseJUnit([]byte(`<testsuites>
			<testsuite name="a.spec.ts" hostname="chromium"><testcase name="t" classname="a.spec.ts"/></testsuite>
			<testsuite name="a.spec.ts" hostname="firefox"><testcase name="t" classname="a.spec.ts"><failure message="x"/></testcase></testsuite>
		</testsuites>`))
		if err != nil {
			t.Fatal(err)
		}
		checkResults(t, got, []want{{"a.spec.ts", "t", passed, 0, 0, ""}, {"a.spec.ts", "t", failed, 0, 0, "x"}})
	})
	t.Run("declared charset, entities and a nameless case", func(t *testing.T) {
		got, err := ParseJUnit([]byte(`<?xml version="1.0" encoding="ISO-8859-1"?>
			<testsuite name="pytest"><testcase classname="k.Test" time="0.5"><failure>a &lt; b &#38; c</failure></testcase></testsuite>`))
		if err != nil {
			t.Fatal(err)
		}
		checkResults(t, got, []want{{"k.Test", "k.Test", failed, 500, 0, "a < b & c"}})
	})
}

func TestParseJUnitBounds(t *testing.T) {
	huge := strings.Repeat("x", 100_000)
	doc := fmt.Sprintf(`<testsuite name="%s"><testcase name="%s"><failure message="%s"/></testcase></testsuite>`, huge, huge, huge)
	got, err := ParseJUnit([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, got)

	var b strings.Builder
	b.WriteString("<testsuite>")
	for i := range 10 {
		fmt.Fprintf(&b, `<testcase name="t%d"/>`, i)
	}
	b.WriteString("</testsuite>")
	got, err = parseJUnit([]byte(b.String()), 4)
	if !errors.Is(err, ErrLimit) || len(got) != 4 {
		t.Fatalf("over the test bound: %d results, %v", len(got), err)
	}

	// Nesting is refused early: the decoder would hold every open element in memory.
	for _, deep := range []string{
		"<testsuite><testcase name=\"t\"><system-out>" + strings.Repeat("<a>", 1_000_000),
		strings.Repeat("<testsuite>", 1_000_000),
	} {
		if _, err := ParseJUnit([]byte(deep)); !errors.Is(err, errXMLDepth) {
			t.Errorf("deep nesting: %v", err)
		}
	}
}

func FuzzJUnit(f *testing.F) {
	for _, name := range []string{"pytest.xml", "TEST-com.acme.checkout.PaymentServiceTest.xml", "gradle-test-retry.xml", "phpunit.xml", "jest-junit.xml"} {
		f.Add(readTestdata(f, "junit/"+name))
	}
	f.Add([]byte(`<testsuite><testcase name="a"><flakyFailure message="m"><stackTrace>s</stackTrace></flakyFailure></testcase><testcase name="a"/></testsuite>`))
	f.Add([]byte(`<testsuites><testsuite><testsuite name="n"><testcase name="x" time="1e309"><rerunError/></testcase></testsuite></testsuite></testsuites>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ParseJUnit(data)
		if err != nil && got != nil && !errors.Is(err, ErrLimit) {
			t.Fatalf("results with error %v", err)
		}
		checkInvariants(t, got)
	})
}

// The JUnit Platform console launcher's XML (its legacy reporter) names the suite after its
// engine, "JUnit Jupiter": the suite is each test's class. A JVM exception keeps its type,
// message and stack, as Java users read it; an exception without a message, or reported
// without its stack, still leads with its type.
func TestParseJUnitConsoleLauncher(t *testing.T) {
	xml := `<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="JUnit Jupiter" tests="4" skipped="0" failures="3" errors="0" timestamp="2026-05-01T10:00:00" hostname="ci" time="0.123">
<properties><property name="java.version" value="17.0.12"/></properties>
<testcase name="parsesOrderNumber()" classname="com.shop.OrderParserTest" time="0.02">
<failure message="For input string: &quot;ORD-17&quot;" type="java.lang.NumberFormatException">java.lang.NumberFormatException: For input string: "ORD-17"
	at java.base/java.lang.NumberFormatException.forInputString(NumberFormatException.java:67)
	at java.base/java.lang.Integer.parseInt(Integer.java:662)
	at com.shop.OrderParser.parse(OrderParser.java:9)
	at com.shop.OrderParserTest.parsesOrderNumber(OrderParserTest.java:14)
</failure>
<system-out><![CDATA[unique-id: [engine:junit-jupiter]/[class:com.shop.OrderParserTest]/[method:parsesOrderNumber()]
]]></system-out>
</testcase>
<testcase name="voids()" classname="com.shop.OrderServiceTest" time="0.003">
<failure type="java.lang.NullPointerException">java.lang.NullPointerException
	at com.shop.OrderService.voidOrder(OrderService.java:40)
</failure>
</testcase>
<testcase name="refunds()" classname="com.shop.OrderServiceTest" time="0.004">
<failure message="expected: &lt;40.00&gt; but was: &lt;39.99&gt;" type="org.opentest4j.AssertionFailedError"/>
</testcase>
<testcase name="totals()" classname="com.shop.OrderParserTest" time="0.001"/>
</testsuite>`
	got, err := ParseJUnit([]byte(xml))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ suite, name, errPrefix string }{
		{"com.shop.OrderParserTest", "parsesOrderNumber()", "java.lang.NumberFormatException: For input string: \"ORD-17\"\n\tat java.base/java.lang.NumberFormatException.forInputString"},
		{"com.shop.OrderServiceTest", "voids()", "java.lang.NullPointerException\n\tat com.shop.OrderService.voidOrder(OrderService.java:40)"},
		{"com.shop.OrderServiceTest", "refunds()", "org.opentest4j.AssertionFailedError: expected: <40.00> but was: <39.99>"},
		{"com.shop.OrderParserTest", "totals()", ""},
	}
	if len(got) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Suite != w.suite || g.Name != w.name || !strings.HasPrefix(g.Error, w.errPrefix) || (w.errPrefix == "") != (g.Error == "") {
			t.Errorf("result %d: %q / %q error %q, want %q / %q error starting %q", i, g.Suite, g.Name, g.Error, w.suite, w.name, w.errPrefix)
		}
	}
	if !strings.Contains(got[0].Error, "at com.shop.OrderParserTest.parsesOrderNumber(OrderParserTest.java:14)") {
		t.Errorf("the stack lost its frames: %q", got[0].Error)
	}
}
