package report

import (
	"errors"
	"testing"

	"verdict/internal/domain"
)

// testdata/playwright/results.json was written by Playwright 1.65's JSON reporter: two
// projects, retries 2, nested describe blocks, test.skip, test.fail and a timeout.
func TestParsePlaywrightSample(t *testing.T) {
	got, err := ParsePlaywright(readTestdata(t, "playwright/results.json"))
	if err != nil {
		t.Fatal(err)
	}
	const (
		apiCheckout   = "[api] checkout.spec.ts › Checkout"
		smokeCheckout = "[smoke] checkout.spec.ts › Checkout"
		apiPayment    = apiCheckout + " › payment"
		smokePayment  = smokeCheckout + " › payment"
	)
	checkResults(t, got, []want{
		{apiCheckout, "adds an item to the cart", passed, 6, 0, ""},
		{smokeCheckout, "adds an item to the cart", passed, 19, 0, ""},
		{apiCheckout, "applies a coupon", skipped, 2, 0, ""},
		{smokeCheckout, "applies a coupon", skipped, 15, 0, ""},
		// test.fail(): failing is its expected status, so it passes, without an error.
		{apiCheckout, "known bug: totals round down", passed, 5, 0, ""},
		{smokeCheckout, "known bug: totals round down", passed, 35, 0, ""},
		{apiPayment, "rejects an expired card", failed, 11, 2, "Error: expect(received).toEqual(expected) // deep equality\n\n- Expected  - 1"},
		{smokePayment, "rejects an expired card", failed, 12, 2, "Error: expect(received).toEqual(expected)"},
		{apiPayment, "retries the gateway", flaky, 6, 1, "Error: gateway answered 503\n\nexpect(received).toBeGreaterThan(expected)"},
		{smokePayment, "retries the gateway", flaky, 15, 1, "Error: gateway answered 503"},
		{"[api] login.spec.ts", "logs in with a valid password", passed, 22, 0, ""},
		{"[smoke] login.spec.ts", "logs in with a valid password", passed, 61, 0, ""},
		{"[api] login.spec.ts", "locks the account after five failures", failed, 302, 2, "Test timeout of 300ms exceeded."},
		{"[smoke] login.spec.ts", "locks the account after five failures", failed, 305, 2, "Test timeout of 300ms exceeded."},
	})
	checkInvariants(t, got)
	if s := domain.Summarize(got); s != (domain.Summary{Total: 14, Passed: 6, Failed: 4, Skipped: 2, Flaky: 2}) {
		t.Errorf("summary %+v; the report's own stats say 6 expected, 4 unexpected, 2 flaky, 2 skipped", s)
	}
}

// Without the test's own status (older reporters, hand-made files) the results decide.
func TestParsePlaywrightResults(t *testing.T) {
	doc := `{"config":{},"suites":[{"title":"a.spec.ts","specs":[
		{"title":"flaky","tests":[{"expectedStatus":"passed","results":[
			{"status":"timedOut","duration":30000,"retry":0,"errors":[{"message":"Test timeout of 30000ms exceeded."}]},
			{"status":"passed","duration":812.6,"retry":1}]}]},
		{"title":"expected to fail but passed","tests":[{"expectedStatus":"failed","results":[{"status":"passed","duration":3}]}]},
		{"title":"interrupted","tests":[{"results":[{"status":"interrupted","duration":9,"error":{"message":"\u001b[31mTest was interrupted.\u001b[39m"}}]}]},
		{"title":"never ran","tests":[{"expectedStatus":"passed","results":[]}]}
	]}]}`
	got, err := ParsePlaywright([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	checkResults(t, got, []want{
		{"a.spec.ts", "flaky", flaky, 813, 1, "Test timeout of 30000ms exceeded."},
		{"a.spec.ts", "expected to fail but passed", failed, 3, 0, ""},
		{"a.spec.ts", "interrupted", failed, 9, 0, "Test was interrupted."},
		{"a.spec.ts", "never ran", skipped, 0, 0, ""},
	})
}

func TestParsePlaywrightShapes(t *testing.T) {
	for _, doc := range []string{
		`{"suites":[]}`, // no config or stats: some other tool's file
		`{"config":{},"stats":{}}`,
		`{"name":"verdict","version":"1.0.0","devDependencies":{"@playwright/test":"1.65.1"}}`,
		`{"config":{},"suites":null}`,
		`{"config":{},"suites":"not a report"}`,
		`[{"suites":[]}]`,
	} {
		if _, err := ParsePlaywright([]byte(doc)); !errors.Is(err, ErrUnrecognized) {
			t.Errorf("%s: %v, want ErrUnrecognized", doc, err)
		}
	}
	if _, err := ParsePlaywright([]byte(`{"config":{},"suites":[{"specs":[{"tests":[{"results":[{"duration":"slow"}]}]}]}]}`)); err == nil {
		t.Error("a wrongly typed field must be an error")
	}
	got, err := parsePlaywright(readTestdata(t, "playwright/results.json"), 3)
	if !errors.Is(err, ErrLimit) || len(got) != 3 {
		t.Errorf("over the test bound: %d results, %v", len(got), err)
	}
}

func FuzzPlaywright(f *testing.F) {
	f.Add(readTestdata(f, "playwright/results.json"))
	f.Add([]byte(`{"stats":{},"suites":[{"title":"t","suites":[{"title":"d","specs":[{"title":"s","tests":[{"projectName":"p","status":"flaky","results":[{"status":"failed","duration":-1},{"status":"passed","duration":1e308}]}]}]}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ParsePlaywright(data)
		if err != nil && got != nil && !errors.Is(err, ErrLimit) {
			t.Fatalf("results with error %v", err)
		}
		checkInvariants(t, got)
	})
}
