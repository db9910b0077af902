package analyzer

import (
	"testing"

	"verdict/internal/ai"
)

// TestRuleOrder pins the orderings that matter: what explains the other comes first.
func TestRuleOrder(t *testing.T) {
	cases := []struct {
		name, message, rule string
		category            ai.Category
	}{
		{"a locator timeout is a locator problem",
			"TimeoutError: locator.click: Timeout 30000ms exceeded.\nCall log:\n  - waiting for locator('#pay')", "locator-not-found", ai.TestBug},
		{"unless the page never loaded",
			"TimeoutError: page.goto: Timeout 30000ms exceeded.\nCall log:\n  - navigating to \"http://web:3000/\", waiting until \"load\"", "navigation-timeout", ai.Environment},
		{"or the connection was refused",
			"Error: locator.click: net::ERR_CONNECTION_REFUSED\nCall log:\n  - waiting for locator('#pay')", "connection-refused", ai.Environment},
		{"a content assertion names its locator but is about content",
			"Error: expect(locator).toHaveText(expected)\nExpected string: \"Paid\"\nReceived string: \"Failed\"\nCall log:\n  - waiting for locator('#status')\n  - locator resolved to <b id=\"status\">Failed</b>", "content-mismatch", ai.ProductBug},
		{"a content assertion without its element is a locator problem",
			"Error: expect(locator).toHaveText(expected)\nExpected string: \"Paid\"\nReceived: <element(s) not found>\nCall log:\n  - waiting for locator('#status')", "locator-not-found", ai.TestBug},
		{"a JSON SyntaxError is the response's fault",
			"SyntaxError: Unexpected token '<', \"<!DOCTYPE \"... is not valid JSON", "invalid-response", ai.ProductBug},
		{"a SyntaxError in a spec is the test's",
			"SyntaxError: /app/tests/a.spec.ts: Missing semicolon. (12:5)", "test-code-error", ai.TestBug},
		{"a 503 is the environment's", "AssertionError: expected 503 to equal 200", "gateway-unavailable", ai.Environment},
		{"a 500 is the product's", "AssertionError: expected 500 to equal 200", "server-error-status", ai.ProductBug},
		{"a 404 is a status mismatch", "AssertionError: 404 != 200", "status-mismatch", ai.ProductBug},
		{"a setup assertion is the test's",
			"Error: expect(received).toBe(expected)\n\nExpected: true\nReceived: false\nwhile running \"beforeEach\" hook", "setup-assertion", ai.TestBug},
		{"unless the setup got a 500",
			"Error: expect(received).toBe(expected)\n\nExpected: 200\nReceived: 500\nwhile running \"beforeEach\" hook", "server-error-status", ai.ProductBug},
		{"a Selenium wait for an element is a locator problem",
			"org.openqa.selenium.TimeoutException: Expected condition failed: waiting for visibility of element located by By.id: pay", "locator-not-found", ai.TestBug},
		{"a plain timeout is the environment's", "java.util.concurrent.TimeoutException: timed out after 5 seconds", "timeout", ai.Environment},
		{"a module error is not a DNS error", "ModuleNotFoundError: No module named 'faker'", "test-code-error", ai.TestBug},
	}
	rc := newRunContext("http://web:3000")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := applyRules(newFailureText(c.message, ""), rc)
			if m.rule.id != c.rule || m.rule.category != c.category {
				t.Errorf("rule %s (%s), want %s (%s); matched %q", m.rule.id, m.rule.category, c.rule, c.category, m.matched)
			}
		})
	}
}

func TestRuntimeErrorsByWhereTheyWereRaised(t *testing.T) {
	rc := newRunContext("")
	for _, c := range []struct {
		stack, rule string
		category    ai.Category
	}{
		{"    at /app/tests/cart.spec.ts:3:9", "runtime-error", ai.TestBug},
		{"\tat com.acme.billing.InvoiceCalculator.total(InvoiceCalculator.java:57)\n\tat com.acme.billing.InvoiceIT.issues(InvoiceIT.java:48)", "app-code-error", ai.ProductBug},
		{"    at Object.get (/app/node_modules/lodash/get.js:10:3)", "runtime-error", ai.TestBug},
	} {
		m := applyRules(newFailureText("TypeError: Cannot read properties of undefined (reading 'id')", c.stack), rc)
		if m.rule.id != c.rule || m.rule.category != c.category {
			t.Errorf("%q: rule %s (%s), want %s", c.stack, m.rule.id, m.rule.category, c.rule)
		}
	}
	lib := applyRules(newFailureText("TypeError: x is not a function", "    at f (/app/node_modules/x/index.js:1:1)"), rc)
	test := applyRules(newFailureText("TypeError: x is not a function", "    at /app/tests/a.spec.ts:1:1"), rc)
	if lib.strength >= test.strength {
		t.Errorf("raised in a library (%v) should be less sure than in a test file (%v)", lib.strength, test.strength)
	}
}

func TestHTTPStatusIsTheActualOne(t *testing.T) {
	for text, want := range map[string]int{
		"assert 500 == 201":                            500,
		"Expected status code <200> but was <503>.":    503,
		"Status expected:<201> but was:<400>":          400,
		"expected: <200> but was: <502>":               502,
		"Expected: is <200>\n     but: was <404>":      404,
		"Expected: 201\nReceived: 500":                 500,
		"AssertionError: expected 500 to equal 200":    500,
		"AssertionError: 404 != 200 : GET /x":          404,
		" +  where 500 = <Response [500]>.status_code": 500,
		"Response status: 409":                         409,
		"  > 500: Internal Server Error":               500,
		"Received: 503 Service Unavailable":            503,
		"expected: <3> but was: <2>":                   0,
		"Timeout 15000ms exceeded at line 200":         0,
		"expected 999 to equal 200":                    0,
	} {
		if got, _ := newFailureText(text, "").httpStatus(); got != want {
			t.Errorf("%q: status %d, want %d", text, got, want)
		}
	}
}

func TestFindTarget(t *testing.T) {
	for _, c := range []struct {
		base, text, want string
		isBase           bool
	}{
		{"http://web:3000", "net::ERR_CONNECTION_REFUSED at http://web:3000/login", "http://web:3000", true},
		{"http://localhost:3000", "connect ECONNREFUSED 127.0.0.1:3000", "http://localhost:3000", true},
		{"http://host.docker.internal:3000", "connect ECONNREFUSED 127.0.0.1:3000", "http://host.docker.internal:3000", true},
		{"https://shop.test", "GET https://shop.test/cart failed", "https://shop.test", true},
		{"http://web:3000", "HTTPConnectionPool(host='api', port=8000): Max retries exceeded", "api:8000", false},
		{"http://web:3000", "Connection to localhost:5432 refused.", "localhost:5432", false},
		{"http://web:3000", "connection to server at \"postgres\" (10.0.0.5), port 5432 failed; see https://sqlalche.me/e/20/e3q8", "postgres:5432", false},
		{"http://web:3000", "java.net.UnknownHostException: payments.internal", "payments.internal", false},
		{"http://web:3000", "connect ECONNREFUSED 127.0.0.1:3000", "127.0.0.1:3000", false},
		{"", "Connection refused", "", false},
	} {
		got, isBase := newRunContext(c.base).findTarget(c.text)
		if got != c.want || isBase != c.isBase {
			t.Errorf("%q with BASE_URL %q: %q (base %v), want %q (%v)", c.text, c.base, got, isBase, c.want, c.isBase)
		}
	}
}
