package report

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"verdict/internal/domain"
)

func allureSample(t testing.TB) [][]byte {
	t.Helper()
	names, err := filepath.Glob("testdata/allure-results/*-result.json")
	if err != nil || len(names) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	var files [][]byte
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, data)
	}
	return files
}

func sortResults(rs []domain.TestResult) {
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].Suite != rs[j].Suite {
			return rs[i].Suite < rs[j].Suite
		}
		return rs[i].Name < rs[j].Name
	})
}

// testdata/allure-results was written by allure-playwright 3.12 for the same run as
// testdata/playwright/results.json: 7 tests in 2 projects, retries 2, so 24 result files.
func TestParseAllureSample(t *testing.T) {
	got, err := ParseAllure(allureSample(t)...)
	if err != nil {
		t.Fatal(err)
	}
	sortResults(got)
	const (
		apiCheckout   = "api › checkout.spec.ts › Checkout"
		apiPayment    = "api › checkout.spec.ts › Checkout > payment"
		smokeCheckout = "smoke › checkout.spec.ts › Checkout"
		smokePayment  = "smoke › checkout.spec.ts › Checkout > payment"
	)
	checkResults(t, got, []want{
		{apiCheckout, "adds an item to the cart", passed, 6, 0, ""},
		{apiCheckout, "applies a coupon", skipped, 2, 0, "coupons are off in this environment"},
		{apiCheckout, "known bug: totals round down", passed, 5, 0, ""},
		{apiPayment, "rejects an expired card", failed, 11, 2, "Error: expect(received).toEqual(expected) // deep equality"},
		{apiPayment, "retries the gateway", flaky, 6, 1, "Error: gateway answered 503"},
		{"api › login.spec.ts", "locks the account after five failures", failed, 302, 2, "Test timeout of 300ms exceeded."},
		{"api › login.spec.ts", "logs in with a valid password", passed, 22, 0, ""},
		{smokeCheckout, "adds an item to the cart", passed, 19, 0, ""},
		{smokeCheckout, "applies a coupon", skipped, 15, 0, "coupons are off in this environment"},
		{smokeCheckout, "known bug: totals round down", passed, 35, 0, ""},
		{smokePayment, "rejects an expired card", failed, 12, 2, "Error: expect(received).toEqual(expected)"},
		{smokePayment, "retries the gateway", flaky, 15, 1, "Error: gateway answered 503"},
		{"smoke › login.spec.ts", "locks the account after five failures", failed, 305, 2, "Test timeout of 300ms exceeded."},
		{"smoke › login.spec.ts", "logs in with a valid password", passed, 61, 0, ""},
	})
	if s := domain.Summarize(got); s != (domain.Summary{Total: 14, Passed: 6, Failed: 4, Skipped: 2, Flaky: 2}) {
		t.Errorf("summary %+v; Playwright itself counted 6 passed, 4 failed, 2 flaky, 2 skipped", s)
	}
}

func allureResultJSON(uuid, historyID, testCaseID, status string, start, stop int64, message string) []byte {
	return fmt.Appendf(nil, `{"uuid":%q,"historyId":%q,"testCaseId":%q,"name":"saves the order","fullName":"tests.test_orders#test_saves_order",
		"status":%q,"statusDetails":{"message":%q,"trace":"Traceback..."},"stage":"finished","start":%d,"stop":%d,
		"labels":[{"name":"parentSuite","value":"tests"},{"name":"suite","value":"test_orders"},{"name":"host","value":"runner-1"},{"name":"framework","value":"pytest"}]}`,
		uuid, historyID, testCaseID, status, message, start, stop)
}

func TestParseAllureAttempts(t *testing.T) {
	const suite = "tests › test_orders"
	cases := []struct {
		name  string
		files [][]byte
		want  want
	}{
		{"broken then passed is flaky, whatever the file order", [][]byte{
			allureResultJSON("u2", "h", "c", "passed", 3000, 3250, ""),
			allureResultJSON("u1", "h", "c", "broken", 1000, 1500, "ConnectionError: refused"),
		}, want{suite, "saves the order", flaky, 250, 1, "ConnectionError: refused"}},
		{"passed then failed fails", [][]byte{
			allureResultJSON("u1", "h", "c", "passed", 1000, 1100, ""),
			allureResultJSON("u2", "h", "c", "failed", 2000, 2300, "AssertionError"),
		}, want{suite, "saves the order", failed, 300, 1, "AssertionError"}},
		{"a copy of one result counts once", [][]byte{
			allureResultJSON("u1", "h", "c", "failed", 1000, 1100, "boom"),
			allureResultJSON("u1", "h", "c", "failed", 1000, 1100, "boom"),
		}, want{suite, "saves the order", failed, 100, 0, "boom"}},
		{"testCaseId groups when there is no historyId", [][]byte{
			allureResultJSON("u1", "", "c", "failed", 1000, 1100, "boom"),
			allureResultJSON("u2", "", "c", "passed", 2000, 2100, ""),
		}, want{suite, "saves the order", flaky, 100, 1, "boom"}},
		{"unknown is not a pass", [][]byte{
			allureResultJSON("u1", "h", "c", "unknown", 1000, 900, ""),
		}, want{suite, "saves the order", failed, 0, 0, ""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseAllure(c.files...)
			if err != nil {
				t.Fatal(err)
			}
			checkResults(t, got, []want{c.want})
		})
	}
	t.Run("another historyId with the same testCaseId is another test", func(t *testing.T) {
		got, err := ParseAllure(allureResultJSON("u1", "c:chromium", "c", "passed", 1, 2, ""), allureResultJSON("u2", "c:firefox", "c", "failed", 1, 2, "x"))
		if err != nil || len(got) != 2 {
			t.Fatalf("got %d results, %v", len(got), err)
		}
	})
}

func TestParseAllureShapes(t *testing.T) {
	if _, err := ParseAllure([]byte(`{"uuid":"u","children":["a"],"befores":[]}`)); !errors.Is(err, ErrUnrecognized) {
		t.Errorf("a container file: %v", err)
	}
	if _, err := ParseAllure([]byte(`{"uuid":"u","name":"x","status":"passed"`)); err == nil || errors.Is(err, ErrUnrecognized) {
		t.Errorf("a truncated result must be an error: %v", err)
	}
	if _, err := ParseAllure([]byte(`{"name":"x","status":"passed","start":"yesterday"}`)); err == nil {
		t.Error("a wrongly typed field must be an error")
	}
	got, err := ParseAllure()
	if err != nil || len(got) != 0 {
		t.Errorf("no files: %v %v", got, err)
	}
}

func FuzzAllure(f *testing.F) {
	files := allureSample(f)
	f.Add(files[0], files[1])
	f.Add(allureResultJSON("u1", "h", "c", "broken", 1000, 1500, "\x1b[31mboom\x1b[39m"), allureResultJSON("u2", "h", "c", "passed", 2000, 2100, ""))
	f.Add([]byte(`{"name":"n","status":"failed","start":-9223372036854775808,"stop":9223372036854775807}`), []byte(`{}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		got, err := ParseAllure(a, b)
		if err != nil && got != nil {
			t.Fatalf("results with error %v", err)
		}
		checkInvariants(t, got)
	})
}
