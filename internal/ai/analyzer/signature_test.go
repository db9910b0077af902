package analyzer

import (
	"strings"
	"testing"
	"time"
)

// failureText is a message and a stack.
type failurePair struct{ message, stack string }

func TestSameFailureSameSignature(t *testing.T) {
	cases := []struct {
		name string
		a, b failurePair
	}{
		{"timeouts and line:column", failurePair{
			"TimeoutError: locator.click: Timeout 15000ms exceeded.\nCall log:\n  - waiting for getByRole('button', { name: 'Place order' })",
			"    at CheckoutPage.placeOrder (/app/tests/pages/checkout.page.ts:48:23)\n    at /app/tests/checkout.spec.ts:31:5"}, failurePair{
			"TimeoutError: locator.click: Timeout 30000ms exceeded.\nCall log:\n  - waiting for getByRole('button', { name: 'Place order' })",
			"    at CheckoutPage.placeOrder (/app/tests/pages/checkout.page.ts:52:9)\n    at /app/tests/checkout.spec.ts:35:11"}},
		{"ports and addresses", failurePair{"Error: connect ECONNREFUSED 172.18.0.4:54321", ""},
			failurePair{"Error: connect ECONNREFUSED 10.0.3.17:41873", ""}},
		{"UUIDs", failurePair{"AssertionError: order 550e8400-e29b-41d4-a716-446655440000 not found", ""},
			failurePair{"AssertionError: order 6fa459ea-ee8a-3ca4-894e-db77e160355e not found", ""}},
		{"hex addresses", failurePair{"NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f3b2c1d4e50>: Failed to establish a new connection')", ""},
			failurePair{"NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7fa01c9b2d10>: Failed to establish a new connection')", ""}},
		{"pytest temp paths", failurePair{"FileNotFoundError: [Errno 2] No such file or directory: '/tmp/pytest-of-root/pytest-12/test_upload0/invoice.pdf'", ""},
			failurePair{"FileNotFoundError: [Errno 2] No such file or directory: '/tmp/pytest-of-runner/pytest-3/test_upload1/invoice.pdf'", ""}},
		{"macOS and Windows temp paths", failurePair{"Error: ENOENT: no such file or directory, open '/var/folders/x8/9k2m_1dn5sz3/T/playwright-artifacts-AbC123/trace.zip'", ""},
			failurePair{`Error: ENOENT: no such file or directory, open 'C:\Users\ada\AppData\Local\Temp\playwright-artifacts-Xy9Zq1\trace.zip'`, ""}},
		{"ISO timestamps", failurePair{"AssertionError: token expired at 2024-05-01T12:34:56.789Z", ""},
			failurePair{"AssertionError: token expired at 2025-11-30T01:02:03.004Z", ""}},
		{"clock times and epoch milliseconds", failurePair{"[12:04:55] request 1714567890123 failed", ""},
			failurePair{"[23:59:01] request 1733000000456 failed", ""}},
		{"durations in other units", failurePair{"Timed out after 5000ms waiting for the job (polled every 1.2 s)", ""},
			failurePair{"Timed out after 30s waiting for the job (polled every 3.5 s)", ""}},
		{"Selenium tries and sessions", failurePair{
			"Expected condition failed: waiting for visibility of element located by By.id: pay (tried for 10 second(s) with 500 milliseconds interval)\nSession ID: 5d9c2e1f0b7a4e3c8f6a1b2c3d4e5f60", ""}, failurePair{
			"Expected condition failed: waiting for visibility of element located by By.id: pay (tried for 30 second(s) with 250 milliseconds interval)\nSession ID: 0a1b2c3d4e5f60718293a4b5c6d7e8f9", ""}},
		{"retry logs of another length", failurePair{
			"Error: locator.click: Timeout 5000ms exceeded.\nCall log:\n  - waiting for locator('#pay')\n  - locator resolved to <button id=\"pay\">Pay</button>\n  - attempting click action\n  - element is not enabled\n  - retrying click action, attempt #1\n  - waiting 20ms\n  - element is not enabled\n  - retrying click action, attempt #2\n  - waiting 100ms", ""}, failurePair{
			"Error: locator.click: Timeout 5000ms exceeded.\nCall log:\n  - waiting for locator('#pay')\n  - locator resolved to <button id=\"pay\">Pay</button>\n  - attempting click action\n  - element is not enabled\n  - retrying click action, attempt #1\n  - waiting 20ms\n  - element is not enabled\n  - retrying click action, attempt #2\n  - waiting 100ms\n  - element is not enabled\n  - retrying click action, attempt #3\n  - waiting 100ms\n  - element is not enabled\n  - retrying click action, attempt #4\n  - waiting 500ms", ""}},
		{"Java frames elided", failurePair{"org.opentest4j.AssertionFailedError: expected: <3> but was: <2>",
			"\tat com.acme.CartIT.adds(CartIT.java:52)\n\tat com.acme.CartIT$$Lambda$412/0x0000000800c0b440.run(Unknown Source)\n\t... 72 more"}, failurePair{
			"org.opentest4j.AssertionFailedError: expected: <4> but was: <1>",
			"\tat com.acme.CartIT.adds(CartIT.java:57)\n\tat com.acme.CartIT$$Lambda$388/0x0000000801a2c8f0.run(Unknown Source)\n\t... 80 more"}},
		{"home folders", failurePair{"", "    at /home/runner/work/shop/shop/tests/cart.spec.ts:10:5"},
			failurePair{"", "    at /home/ada/work/shop/shop/tests/cart.spec.ts:12:7"}},
		{"e-mail addresses", failurePair{"AssertionError: user qa+1714567@example.com was not created", ""},
			failurePair{"AssertionError: user signup.test.42@mailinator.com was not created", ""}},
		{"generated ids", failurePair{"Error: order ORD-8f3k2j9x7q was not shipped (trace a8Kz92Lm)", ""},
			failurePair{"Error: order ORD-1a2b3c4d5e was not shipped (trace x7Qp31Vd)", ""}},
		{"URL queries", failurePair{"Error: page.goto: net::ERR_ABORTED at http://web:3000/search?q=shoes&session=abc123", ""},
			failurePair{"Error: page.goto: net::ERR_ABORTED at http://web:3000/search?q=boots&session=zz9", ""}},
		{"colours", failurePair{"\x1b[31mError: expect(received).toBe(expected)\x1b[39m", ""},
			failurePair{"Error: expect(received).toBe(expected)", ""}},
		{"long quoted page text", failurePair{
			`Expected string: "Order confirmed"` + "\n" + `Received string: "We could not process your payment because the card issuer declined it; please try another card or contact support"`, ""}, failurePair{
			`Expected string: "Order confirmed"` + "\n" + `Received string: "Something went wrong while we were talking to the payment provider, nothing was charged, please retry in a few minutes"`, ""}},
		{"Windows user folders", failurePair{"", `   at C:\Users\ada\source\shop\tests\cart.spec.ts:10:5`},
			failurePair{"", `   at C:\Users\build-agent\source\shop\tests\cart.spec.ts:10:5`}},
		{"status codes (numbers are not the failure's shape)", failurePair{"assert 500 == 201", ""},
			failurePair{"assert 503 == 200", ""}},
		{"spacing", failurePair{"  Error:   boom \r\n\n\t at  x.ts:1:2  ", ""},
			failurePair{"Error: boom\n at x.ts:9:9", ""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, b := Signature(c.a.message, c.a.stack), Signature(c.b.message, c.b.stack)
			if a != b {
				t.Errorf("signatures differ:\n%q\n%q", Normalize(c.a.message, c.a.stack), Normalize(c.b.message, c.b.stack))
			}
		})
	}
}

func TestDifferentFailuresDifferentSignatures(t *testing.T) {
	cases := []struct {
		name string
		a, b failurePair
	}{
		{"locator against navigation timeout",
			failurePair{"TimeoutError: locator.click: Timeout 30000ms exceeded.", ""},
			failurePair{"TimeoutError: page.goto: Timeout 30000ms exceeded.", ""}},
		{"other locator",
			failurePair{"  - waiting for getByRole('button', { name: 'Place order' })", ""},
			failurePair{"  - waiting for getByRole('button', { name: 'Cancel order' })", ""}},
		{"other exception type",
			failurePair{"TypeError: loginPage.submit is not a function", ""},
			failurePair{"ReferenceError: loginPage is not defined", ""}},
		{"other file",
			failurePair{"Error: boom", "    at /app/tests/login.spec.ts:10:5"},
			failurePair{"Error: boom", "    at /app/tests/checkout.spec.ts:10:5"}},
		{"refused against reset",
			failurePair{"Error: connect ECONNREFUSED 127.0.0.1:3000", ""},
			failurePair{"Error: read ECONNRESET 127.0.0.1:3000", ""}},
		{"other matcher",
			failurePair{"Error: expect(received).toBe(expected)", ""},
			failurePair{"Error: expect(received).toEqual(expected)", ""}},
		{"other fixture",
			failurePair{"E       fixture 'user_factory' not found", ""},
			failurePair{"E       fixture 'order_factory' not found", ""}},
		{"other module",
			failurePair{"ModuleNotFoundError: No module named 'faker'", ""},
			failurePair{"ModuleNotFoundError: No module named 'requests'", ""}},
		{"other selector",
			failurePair{`no such element: Unable to locate element: {"method":"css selector","selector":"#login"}`, ""},
			failurePair{`no such element: Unable to locate element: {"method":"css selector","selector":"#logout"}`, ""}},
		{"other endpoint",
			failurePair{"Error: apiRequestContext.get: connect ECONNREFUSED at http://api:8080/v1/users", ""},
			failurePair{"Error: apiRequestContext.get: connect ECONNREFUSED at http://api:8080/v1/orders", ""}},
		{"other host",
			failurePair{"getaddrinfo ENOTFOUND api.staging.acme.test", ""},
			failurePair{"getaddrinfo ENOTFOUND api.prod.acme.test", ""}},
		{"other expected text",
			failurePair{`Expected string: "Order confirmed"`, ""},
			failurePair{`Expected string: "Order cancelled"`, ""}},
		{"message against none", failurePair{"Error: boom", ""}, failurePair{"", ""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if a, b := Signature(c.a.message, c.a.stack), Signature(c.b.message, c.b.stack); a == b {
				t.Errorf("same signature %s for\n%q\n%q", a, Normalize(c.a.message, c.a.stack), Normalize(c.b.message, c.b.stack))
			}
		})
	}
}

// TestNormalizeKeepsWhatIdentifiesTheFailure: exception, matcher, locator and file names stay.
func TestNormalizeKeepsWhatIdentifiesTheFailure(t *testing.T) {
	got := Normalize("TimeoutError: locator.click: Timeout 15000ms exceeded.\nCall log:\n  - waiting for getByRole('button', { name: 'Place order' })",
		"    at CheckoutPage.placeOrder (/app/tests/pages/checkout.page.ts:48:23)")
	for _, want := range []string{"TimeoutError", "locator.click", "getByRole('button', { name: 'Place order' })", "/app/tests/pages/checkout.page.ts", "CheckoutPage.placeOrder"} {
		if !strings.Contains(got, want) {
			t.Errorf("normalised text lost %q:\n%s", want, got)
		}
	}
	for _, gone := range []string{"15000", ":48", ":23"} {
		if strings.Contains(got, gone) {
			t.Errorf("normalised text kept %q:\n%s", gone, got)
		}
	}
	if got := Normalize("x /tmp/a/b.txt user@example.com http://h:8080/p?q=1 /home/bob/x", ""); got != "x <tmp> <email> http://h:#/p ~/x" {
		t.Errorf("replacements: %q", got)
	}
}

func TestSignatureShape(t *testing.T) {
	s := Signature("Error: boom", "")
	if len(s) != SignatureLen || strings.Trim(s, "0123456789abcdef") != "" {
		t.Fatalf("signature %q is not %d hex characters", s, SignatureLen)
	}
	if s != Signature("Error: boom", "") {
		t.Fatal("signature is not deterministic")
	}
}

// TestNormalizeIsBounded: megabytes of message cost what 8 KiB do, and give at most 4 KiB.
func TestNormalizeIsBounded(t *testing.T) {
	huge := strings.Repeat("Error: value 12345 at 0xdeadbeef in /tmp/x/y.txt\n", 200_000) // ~10 MB
	start := time.Now()
	n := Normalize(huge, huge)
	if len(n) > maxNormalizedBytes {
		t.Errorf("normalised text of %d bytes", len(n))
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("normalising took %v", d)
	}
	long := strings.Repeat("word ", 10_000) // one line of 50 KB
	if n := Normalize(long, ""); len(n) > maxNormalizedLine {
		t.Errorf("a normalised line of %d bytes", len(n))
	}
	frames := strings.Repeat("    at com.acme.Deep.call(Deep.java:1)\n    at com.acme.Other.call(Other.java:2)\n", 50)
	if got := strings.Count(Normalize("Error", frames), "\nat "); got != 2 {
		// repeated frames are kept once: two distinct frames
		t.Errorf("%d frames kept of two distinct ones", got)
	}
	var distinct strings.Builder
	for i := range 50 {
		distinct.WriteString("    at com.acme.Frame" + string(rune('A'+i%26)) + string(rune('a'+i/26)) + ".call(F.java:1)\n")
	}
	if got := strings.Count(Normalize("Error", distinct.String()), "\nat "); got != maxFrames {
		t.Errorf("%d frames kept, want %d", got, maxFrames)
	}
}

func TestNormalizeIsIdempotentOnTheCorpus(t *testing.T) {
	for _, c := range loadCorpus(t) {
		for _, tr := range c.Tests {
			msg, stack := tr.Error, tr.Stack
			n := Normalize(msg, stack)
			if again := Normalize(n, ""); again != n {
				t.Errorf("%s: normalising twice changes the text:\n%q\n%q", c.ID, n, again)
			}
		}
	}
}

func TestSplitError(t *testing.T) {
	msg, stack := SplitError("java.lang.AssertionError: boom\nexpected: <1>\n\tat com.acme.T.t(T.java:3)\n\tat x.Y.z(Y.java:4)")
	if msg != "java.lang.AssertionError: boom\nexpected: <1>" || !strings.HasPrefix(stack, "\tat com.acme.T.t") {
		t.Errorf("split into %q and %q", msg, stack)
	}
	msg, stack = SplitError("boom\nTraceback (most recent call last):\n  File \"a.py\", line 1, in <module>")
	if msg != "boom" || !strings.HasPrefix(stack, "Traceback") {
		t.Errorf("split into %q and %q", msg, stack)
	}
	if msg, stack := SplitError("just a message\nat the end of the day"); msg != "just a message\nat the end of the day" || stack != "" {
		t.Errorf("a line starting with 'at ' that is no frame was split: %q, %q", msg, stack)
	}
}

func TestTokensAndSimilarity(t *testing.T) {
	a := Tokens(Normalize("TimeoutError: locator.click: Timeout 5000ms exceeded. waiting for getByRole('button')", ""))
	b := Tokens(Normalize("TimeoutError: locator.click: Timeout 9000ms exceeded. waiting for getByRole('link')", ""))
	if want := []string{"button", "click", "exceeded", "for", "getbyrole", "locator", "timeout", "timeouterror", "waiting"}; strings.Join(a, " ") != strings.Join(want, " ") {
		t.Errorf("tokens %v, want %v", a, want)
	}
	if s := Similarity(a, b); s < 0.75 || s > 0.85 { // 8 in common of 10
		t.Errorf("similarity %v, want 0.8", s)
	}
	if Similarity(a, a) != 1 || Similarity(a, nil) != 0 {
		t.Error("similarity of a set with itself must be 1, with nothing 0")
	}
}
