package analyzer

import (
	"strings"

	"verdict/internal/ai"
)

// rule is one pattern of failure text and what it means. The first rule (in table order) with
// a keyword in the failure's lower-cased text decides, unless its refine refuses.
type rule struct {
	id       string
	category ai.Category
	strength float64  // confidence when it matches: how rarely the pattern means anything else
	keywords []string // lower-case; any one makes the rule a candidate (none: every failure is)
	// refine, when set, confirms a candidate or refuses it. It may give another strength (0:
	// the rule's) and point at the text that decided (an offset in the text; -1: the keyword's).
	refine func(ft *failureText) (strength float64, at int, ok bool)
	// aboutTarget: the failure is about reaching a host; its evidence names the host.
	aboutTarget bool
	// inAppCode, when set, is the rule that applies instead when the failure was raised in
	// application code rather than in the suite or a library.
	inAppCode *rule

	one, many string // noun phrases for summaries: "a connection refusal", "connection refusals"
	gist      string // what it means, for summaries: "the application under test was not reachable"
	cause     string // root cause; "{target}" is replaced by the host, or by a general phrase
	fix       string
}

// The rules, most specific first. Order is the design: a page that never loaded (network,
// navigation) explains a locator that was never found; content assertions name the element
// they waited for, so they come before locator rules; setup assertions before other ones.
var rules = []*rule{
	{
		id: "out-of-memory", category: ai.Environment, strength: 0.9,
		keywords: []string{"javascript heap out of memory", "outofmemoryerror", "memoryerror", "oomkilled", "cannot allocate memory", "out of memory"},
		gist:     "the test process ran out of memory",
		one:      "an out-of-memory error", many: "out-of-memory errors",
		cause: "The test process ran out of memory.",
		fix:   "Raise the run's memory limit, or lower the suite's parallelism (workers, forks) and memory use.",
	},
	{
		id: "container-engine-missing", category: ai.Environment, strength: 0.85,
		keywords: []string{"could not find a valid docker environment", "previous attempts to find a docker environment failed", "cannot connect to the docker daemon", "is the docker daemon running", "docker: command not found", "error while fetching server api version"},
		gist:     "the container engine the tests need was not available",
		one:      "a missing container engine", many: "missing container engines",
		cause: "The tests start containers (Testcontainers, a compose file), but no container engine was reachable from where they ran: no Docker daemon, or no access to its socket.",
		fix:   "Give the test run a container engine (the Docker socket, Docker-in-Docker or a remote engine), or run these tests where one is available.",
	},
	{
		id: "connection-refused", category: ai.Environment, strength: 0.85, aboutTarget: true,
		keywords: []string{"econnrefused", "connection refused", "err_connection_refused", "connectexception", "failed to establish a new connection", "could not connect to server", "connection to server at", "failed without a response", "actively refused it", "could not open a connection to sql server", "network-related or instance-specific error", "mongonetworkerror", "can't reach database server", "unable to connect to the database", "failed to connect to server"},
		gist:     "the application under test was not reachable",
		one:      "a connection refusal", many: "connection refusals",
		cause: "Connections to {target} were refused: the application under test (or a service it needs) was not running or not listening there.",
		fix:   "Check that the application is up and that BASE_URL points to it (host and port), and that the suite waits until it is ready.",
	},
	{
		id: "connection-reset", category: ai.Environment, strength: 0.8, aboutTarget: true,
		keywords: []string{"econnreset", "connection reset", "err_connection_reset", "socket hang up", "err_connection_closed", "err_empty_response", "connection aborted", "remotedisconnected", "ehostunreach", "no route to host", "err_address_unreachable", "err_network_changed"},
		gist:     "the application dropped connections",
		one:      "a dropped connection", many: "dropped connections",
		cause: "Connections to {target} were dropped mid-request: the application crashed or restarted, or the network between the run and it failed.",
		fix:   "Check the application's logs and health at the time of the run for crashes or restarts.",
	},
	{
		id: "dns-failure", category: ai.Environment, strength: 0.85, aboutTarget: true,
		keywords: []string{"getaddrinfo", "enotfound ", "eai_again", "name or service not known", "nodename nor servname", "temporary failure in name resolution", "err_name_not_resolved", "unknownhostexception", "could not resolve host", "no such host", "failed to resolve"},
		gist:     "a host name did not resolve",
		one:      "a DNS failure", many: "DNS failures",
		cause: "The host name of {target} could not be resolved from the run's container.",
		fix:   "Check the host name in BASE_URL (or in the service URL the test uses) and that it resolves from the run network.",
	},
	{
		id: "tls-failure", category: ai.Environment, strength: 0.8, aboutTarget: true,
		keywords: []string{"certificate verify failed", "certificate_verify_failed", "sslhandshakeexception", "pkix path building failed", "err_cert_", "self-signed certificate", "self signed certificate", "unable to verify the first certificate", "unable_to_verify_leaf_signature", "cert_has_expired", "certificate has expired", "err_ssl_", "sslerror", "ssl routines"},
		gist:     "TLS connections to the application failed",
		one:      "a TLS certificate failure", many: "TLS certificate failures",
		cause: "TLS connections to {target} failed: its certificate is self-signed, expired, or not trusted inside the run's container.",
		fix:   "Serve a valid certificate, or add the issuing CA to the image's trust store (do not turn verification off in tests).",
	},
	{
		id: "browser-failure", category: ai.Environment, strength: 0.8,
		keywords: []string{"executable doesn't exist", "sessionnotcreatedexception", "could not start a new session", "chrome not reachable", "devtoolsactiveport", "browser has disconnected", "target crashed", "page crashed", "session deleted because of page crash", "browsertype.launch", "failed to launch", "no space left on device", "unable to obtain driver", "executable needs to be in path", "only supports chrome version", "session not created"},
		gist:     "the browser or test runtime did not start or crashed",
		one:      "a browser or runtime failure", many: "browser or runtime failures",
		cause: "The browser or the test runtime failed to start or crashed (browser binaries missing from the image, no WebDriver session, a crashed page, or a full disk).",
		fix:   "Check the image: browsers installed for the test library's version (npx playwright install --with-deps), the Selenium grid reachable, enough memory and disk.",
	},
	{
		id: "navigation-timeout", category: ai.Environment, strength: 0.85, aboutTarget: true,
		keywords: []string{"page.goto", "frame.goto", "page.reload", "page.waitfornavigation", "page.waitforloadstate", "navigating to", "your remote page to load", "timed out waiting for page load", "timed out receiving message from renderer", "err_connection_timed_out", "err_timed_out", "pageloadtimeout"},
		refine:   timedOut,
		gist:     "the application was down or too slow to serve pages",
		one:      "a page that never loaded", many: "pages that never loaded",
		cause: "Pages of {target} did not finish loading in time: the application was down, slow or unresponsive.",
		fix:   "Check that the application is healthy and responsive when the suite starts; raise the navigation timeout only if it is known to be slow.",
	},
	{
		id: "request-timeout", category: ai.Environment, strength: 0.8, aboutTarget: true,
		keywords: []string{"readtimeout", "read timed out", "connecttimeout", "connect timeout", "sockettimeoutexception", "etimedout", "esockettimedout", "request timed out", "cy.request() timed out", "connection timed out", "httptimeoutexception", "timeout awaiting"},
		gist:     "the application did not answer in time",
		one:      "a request timeout", many: "request timeouts",
		cause: "Requests to {target} timed out: the application or a service it calls did not answer in time.",
		fix:   "Check the application's health and latency during the run (slow queries, overloaded dependencies).",
	},
	{
		id: "gateway-unavailable", category: ai.Environment, strength: 0.8, aboutTarget: true,
		keywords: []string{"502", "503", "504", "bad gateway", "service unavailable", "gateway time"},
		refine:   gatewayStatus,
		gist:     "the application was unavailable behind its proxy",
		one:      "a gateway or availability error (502/503/504)", many: "gateway or availability errors (502/503/504)",
		cause: "Requests to {target} were answered with 502, 503 or 504: a proxy could not reach the application, or it was overloaded or still starting.",
		fix:   "Check that the application behind the proxy is running, and make the suite wait for its health check before starting.",
	},
	{
		id: "invalid-response", category: ai.ProductBug, strength: 0.6,
		keywords: []string{"in json at position", "is not valid json", "jsondecodeerror", "json.decoder", "jsonparseexception", "unexpected token '<'", "unexpected token <", "unexpected end of json", "mismatchedinputexception", "cannot deserialize value"},
		gist:     "the application returned bodies the test could not read",
		one:      "an unreadable response body", many: "unreadable response bodies",
		cause: "The application answered with a body the test could not parse, often an HTML error page where JSON was expected.",
		fix:   "Look at the response the application returned for that request: an error page means the endpoint failed.",
	},
	{
		id: "uncaught-app-exception", category: ai.ProductBug, strength: 0.7,
		keywords: []string{"originated from your application code", "uncaught exception in the page", "pageerror", "unhandled promise rejection in the page"},
		gist:     "the application threw an uncaught error in the browser",
		one:      "an uncaught error of the application", many: "uncaught errors of the application",
		cause: "The application's own code threw an uncaught error in the browser while the test ran.",
		fix:   "Fix the error in the application's front-end code (the browser console shows where it is thrown).",
	},
	{
		id: "content-mismatch", category: ai.ProductBug, strength: 0.75,
		keywords: []string{"tohavetext", "tocontaintext", "tohavevalue", "tohaveurl", "tohavetitle", "tohavecount", "tohaveattribute", "tohaveclass", "tohavecss", "to have text", "to contain text", "but the text was", "to have value", "expected to find content", "unexpected value"},
		refine:   elementFound,
		gist:     "the page shows other content than the test expects",
		one:      "a page content mismatch", many: "page content mismatches",
		cause: "The page showed other content than the test expects.",
		fix:   "Compare the expected and received values: if the application shows the wrong thing, fix it; if the change was intended, update the test.",
	},
	{
		id: "ambiguous-locator", category: ai.TestBug, strength: 0.85,
		keywords: []string{"strict mode violation", "resolved to 2 elements", "matched multiple elements", "can only be called on a single element"},
		gist:     "a locator matches several elements",
		one:      "an ambiguous locator", many: "ambiguous locators",
		cause: "A locator matched more than one element, so the test could not tell which one to use.",
		fix:   "Make the locator specific: scope it to a container, or use a role with an exact name or a test id.",
	},
	{
		id: "locator-not-found", category: ai.TestBug, strength: 0.8,
		keywords: []string{"waiting for locator(", "waiting for getby", "waiting for selector", "waiting for frame", "unable to locate element", "selenium.nosuchelementexception", "no such element:", "expected to find element", "never found it", "element(s) not found", "element not found", "resolved to 0 elements", "waiting for visibility of element", "waiting for presence of element", "waiting for element to be clickable", "invalidselectorexception", "is not a valid selector", "waiting for element"},
		gist:     "selectors no longer match the page",
		one:      "a locator that found no element", many: "locators that found no element",
		cause: "The test waited for an element its locator never found: the selector no longer matches the page, or the page is not in the state the test assumes.",
		fix:   "Update the selector (prefer test ids or roles) and check that the test reaches the page state it expects.",
	},
	{
		id: "element-not-interactable", category: ai.TestBug, strength: 0.7,
		keywords: []string{"elementnotinteractableexception", "element not interactable", "elementclickinterceptedexception", "element click intercepted", "is being covered by another element", "staleelementreferenceexception", "stale element", "not attached to the dom", "detached from the dom", "not clickable at point", "element is not visible", "element is not enabled", "outside of the viewport"},
		gist:     "elements were covered, hidden or stale when used",
		one:      "an element the test could not use", many: "elements the test could not use",
		cause: "The element was found but was covered, hidden, disabled, detached or stale when the test acted on it.",
		fix:   "Wait for the element to be ready (visible, enabled, not covered), dismiss overlays first, and query elements again after the page changes.",
	},
	{
		id: "missing-program", category: ai.Environment, strength: 0.75,
		keywords: []string{"executable file not found", "fork/exec", ": command not found", "is not recognized as an internal or external command"},
		gist:     "a program the tests run is missing from the runner",
		one:      "a missing program", many: "missing programs",
		cause: "The tests start a program (a server, a browser driver, a tool) that is not installed or not built where they ran.",
		fix:   "Install or build the program in the image the suite runs in, or put it on the PATH of the run.",
	},
	{
		id: "plugin-fixture-missing", category: ai.Environment, strength: 0.7,
		keywords: pluginFixtures,
		gist:     "a test plugin is not installed where the suite ran",
		one:      "a fixture of a plugin that is not installed", many: "fixtures of plugins that are not installed",
		cause: "The tests use a fixture that a pytest plugin provides (pytest-mock's mocker, pytest-httpx, pytest-benchmark...), and that plugin is not installed in the environment that ran them.",
		fix:   "Install the suite's test dependencies (the plugin) in the image that runs it.",
	},
	{
		id: "test-definition-error", category: ai.TestBug, strength: 0.85,
		keywords: []string{"no runnable methods", "should have exactly one public zero-argument constructor", "should have no parameters", "invalidtestclasserror", "data provider mismatch", "methodmatcherexception", "requires a @dataprovider", "did not have matching fixture data", "unresolved constructor arguments", "no suitable constructor was found", "no keyword with name", "consider using the \"jsdom\" test environment", "your test suite must contain at least one test"},
		gist:     "the test is defined in a way its framework refuses",
		one:      "a test its framework cannot run", many: "tests their framework cannot run",
		cause: "The test framework refused the test as written: a class without runnable tests, a data provider or fixture that does not match the test's parameters, a keyword that does not exist, or a test environment the test does not declare.",
		fix:   "Fix the test's definition at the place the message names (its parameters, fixtures, data provider, keywords or test environment).",
	},
	{
		id: "test-variable-missing", category: ai.TestBug, strength: 0.7,
		keywords: []string{"variable '${", "variable '@{", "variable '&{"},
		refine:   notFoundAfter,
		gist:     "the test uses a variable no one defines",
		one:      "an undefined test variable", many: "undefined test variables",
		cause: "The test (or its suite setup) uses a variable that its resources and the run's arguments do not define.",
		fix:   "Define the variable in the suite's resources, or pass it to the run (robot -v NAME:value).",
	},
	{
		id: "snapshot-mismatch", category: ai.TestBug, strength: 0.6,
		keywords: []string{"tomatchsnapshot", "does not match stored snapshot", "snapshot obsolete", "snapshots obsolete", "obsolete snapshot", "tomatchinlinesnapshot"},
		gist:     "stored snapshots no longer match",
		one:      "an outdated snapshot", many: "outdated snapshots",
		cause: "The rendered output no longer matches the stored snapshot; most often the snapshot was not updated with an intended change.",
		fix:   "Review the snapshot diff: if the change is intended, update the snapshot (jest -u); if not, fix the code that renders it.",
	},
	{
		id: "fixture-error", category: ai.TestBug, strength: 0.85,
		keywords: []string{"fixture '", "fixture \"", "scopemismatch", "@pytest.fixture", "parameterresolutionexception", "no parameterresolver registered", "a fixture file could not be found", "cy.fixture()", "fixtures are not meant to be called directly", "error reading storage state", "no such file or directory", "filenotfounderror", "nosuchfileexception"},
		gist:     "a fixture or file the test needs is missing",
		one:      "a missing fixture or test file", many: "missing fixtures or test files",
		cause: "A fixture, parameter or file the test needs (fixture data, saved login state, upload) is missing or misconfigured.",
		fix:   "Define or import the fixture (conftest.py, fixture files, parameter resolvers) and check its name and scope, or make the setup that writes the file run first.",
	},
	{
		id: "test-code-error", category: ai.TestBug, strength: 0.85,
		keywords: []string{"syntaxerror", "indentationerror", "importerror", "modulenotfounderror", "nameerror", "referenceerror", "is not defined", "cannot find module", "module not found", "webpack compilation error", "can't resolve", "noclassdeffounderror", "classnotfoundexception", "nosuchmethoderror", "compilation failed", "cannot find symbol", "unresolved compilation problem", "error ts", "cannot use import statement"},
		gist:     "the test code does not load",
		one:      "an error in the test code", many: "errors in the test code",
		cause: "The test code does not load or run: a syntax, import or reference error.",
		fix:   "Fix the test code at the file and line shown; run the suite (or a type checker or linter) locally before pushing.",
	},
	{
		id: "jvm-exception-in-test", category: ai.TestBug, strength: 0.5,
		keywords: jvmRuntimeExceptions,
		refine:   raisedAtJVMTestFrame,
		gist:     "a JVM runtime exception was raised in the test's own frame",
		one:      "a JVM runtime exception in a test's frame", many: "JVM runtime exceptions in tests' frames",
		cause: "A runtime exception (a null, a bad cast, an index) was raised in the test method itself: either the test code is wrong, or the product returned a value the test did not expect (a null).",
		fix:   "Look at the value the test used at the line shown: if the product returned it, fix the product; otherwise fix the test.",
	},
	{
		id: "runtime-error", category: ai.TestBug, strength: 0.75,
		keywords: []string{"typeerror", "attributeerror", "nullpointerexception", "cannot read propert", "is not a function", "is not iterable", "keyerror", "indexerror", "has no attribute", "'nonetype' object", "illegalstateexception", "classcastexception", "cannot invoke", "nil pointer dereference", "panic: runtime error", "index out of range", "arrayindexoutofboundsexception", "stringindexoutofboundsexception", "illegalargumentexception", "unsupportedoperationexception", "numberformatexception", "nosuchelementexception", "arraystoreexception", "stackoverflowerror", "nullreferenceexception", "argumentnullexception", "invalidoperationexception"},
		refine:   raisedInTestCode, inAppCode: appCodeRule,
		gist: "the test code failed at runtime",
		one:  "a runtime error in test code", many: "runtime errors in test code",
		cause: "Code failed at runtime (a type error, a null or undefined value, a missing key or attribute) at the frame shown.",
		fix:   "Fix the code at the top frame of the stack; guard values the test reads from responses or pages.",
	},
	{
		id: "setup-assertion", category: ai.TestBug, strength: 0.6,
		keywords: assertionKeywords,
		refine:   inSetupWithoutServerError,
		gist:     "test preconditions were not met",
		one:      "a failed assertion in test setup", many: "failed assertions in test setup",
		cause: "An assertion in a setup hook or fixture failed: the test's preconditions (data, accounts, state) are not what it assumes.",
		fix:   "Check the test data and setup the hook relies on (seed data, accounts, feature flags).",
	},
	{
		id: "server-error-status", category: ai.ProductBug, strength: 0.9,
		refine: serverErrorStatus,
		gist:   "the application failed while handling the requests",
		one:    "a server error (HTTP 5xx)", many: "server errors (HTTP 5xx)",
		cause: "The application answered with an HTTP 5xx error where the test expected success.",
		fix:   "Read the application's logs for the failing request: the error is in the application.",
	},
	{
		id: "status-mismatch", category: ai.ProductBug, strength: 0.8,
		refine: anyStatus,
		gist:   "the application answered with unexpected HTTP statuses",
		one:    "an unexpected HTTP status", many: "unexpected HTTP statuses",
		cause: "The application answered with another HTTP status than the test expects.",
		fix:   "Check the endpoint's behaviour against the test's expectation; fix the application, or the test if the contract changed.",
	},
	{
		id: "execution-timeout", category: ai.Environment, strength: 0.65,
		keywords: []string{"test timeout of", "exceeded timeout of", "failed: timeout >", "conditiontimeoutexception", "was not fulfilled within", "ms exceeded. for async tests", "timeout of", "execution timed out"},
		gist:     "tests ran out of time",
		one:      "a test that ran out of time", many: "tests that ran out of time",
		cause: "Tests ran longer than their time limit: the application or its dependencies were slow.",
		fix:   "Check the application's responsiveness during the run; raise the test timeout only if the work is known to be slow.",
	},
	{
		id: "identical-values", category: ai.TestBug, strength: 0.7,
		keywords: []string{"not equal", "expected", "!="},
		refine:   valuesPrintTheSame,
		gist:     "the compared values are equal but of different types",
		one:      "a comparison of equal values of different types", many: "comparisons of equal values of different types",
		cause: "The assertion's expected and actual values print the same: the test compares values of different types (an int with an int64, a string with a number), not a wrong result.",
		fix:   "Compare values of the same type in the test (convert one side, or use a comparison that ignores the type, like testify's EqualValues).",
	},
	{
		id: "exception-raised", category: ai.TestBug, strength: 0.6,
		refine: exceptionWithOrigin, inAppCode: appCodeRule,
		gist: "the test code raised an exception",
		one:  "an exception raised in test code", many: "exceptions raised in test code",
		cause: "An exception was raised in the test's own code (the top frame of the stack that is not a library is the suite's).",
		fix:   "Fix the test code at the top frame of the stack.",
	},
	{
		id: "assertion-mismatch", category: ai.ProductBug, strength: 0.7,
		keywords: assertionKeywords,
		gist:     "the application returned unexpected values",
		one:      "an assertion mismatch", many: "assertion mismatches",
		cause: "The application returned other values than the test expects.",
		fix:   "Compare the expected and actual values of the failing assertion; fix the application, or the expectation if the change was intended.",
	},
	{
		id: "timeout", category: ai.Environment, strength: 0.6,
		keywords: []string{"timeouterror", "timeoutexception", "timed out", "timeout", "time out", "took too long"},
		gist:     "operations timed out",
		one:      "a timeout", many: "timeouts",
		cause: "Operations timed out: the application or the run's environment was slow or unresponsive.",
		fix:   "Check the application's health and the run's resources (CPU, memory) at the time of the run.",
	},
}

// assertionKeywords mark assertion failures of Jest/Playwright, chai, pytest, unittest, JUnit,
// AssertJ, Hamcrest and RestAssured.
var assertionKeywords = []string{
	"expect(", "assertionerror", "assertionfailederror", "comparisonfailure", "assert ", "expected:",
	"expected ", "but was", "to equal", "to deep equal", " != ", "expecting", "doesn't match",
	"does not match", "expectation failed", "to be truthy", "to be true", "to be false", "to include",
	"to contain", "assertequals", "multipleassertionserror", "softassertionerror",
}

// unknownRule describes a failure no rule matched.
var unknownRule = &rule{
	id: "unrecognised", category: ai.Unknown, strength: 0.2,
	gist: "no known pattern matched",
	one:  "an unrecognised failure", many: "unrecognised failures",
	cause: "The failure matches no known pattern.",
	fix:   "Read the failing tests' messages and the log excerpt, and triage the failure so later runs learn its category.",
}

// appCodeRule is runtime-error's reading when the top frame of the stack is application code
// that a test called: the application failed, not the test.
var appCodeRule = &rule{
	id: "app-code-error", category: ai.ProductBug, strength: 0.55,
	gist: "application code threw an exception",
	one:  "an exception in application code", many: "exceptions in application code",
	cause: "An exception was raised in application code the test called.",
	fix:   "Fix the application code at the top frame of the stack.",
}

// match is a rule's verdict on one failure.
type match struct {
	rule     *rule
	strength float64
	matched  string // the line of text that matched
	target   string // the host the failure is about, for network rules
	isBase   bool   // target is the run's BASE_URL host
}

// applyRules runs the table over one failure's text.
func applyRules(ft *failureText, rc *runContext) match {
	for _, r := range rules {
		at := -1
		for _, k := range r.keywords {
			if i := indexKeyword(ft.lower, k); i >= 0 {
				at = i
				break
			}
		}
		if at < 0 && r.keywords != nil {
			continue
		}
		strength := r.strength
		if r.refine != nil {
			s, refinedAt, ok := r.refine(ft)
			if !ok {
				continue
			}
			if s > 0 {
				strength = s
			}
			if refinedAt >= 0 {
				at = refinedAt
			}
		}
		if r.inAppCode != nil && ft.frameOrigin() == "app" {
			r, strength = r.inAppCode, r.inAppCode.strength
		}
		m := match{rule: r, strength: strength}
		if at >= 0 {
			m.matched = lineAt(ft.text, at)
		}
		if r.aboutTarget {
			m.target, m.isBase = rc.findTarget(ft.text)
			if m.isBase {
				m.strength = min(m.strength+0.1, 0.95)
			}
		}
		return m
	}
	return match{rule: unknownRule, strength: unknownRule.strength}
}

// timedOut confirms a navigation rule: the navigation must have timed out or failed.
func timedOut(ft *failureText) (float64, int, bool) {
	return 0, -1, containsAny(ft.lower, []string{"timeout", "timed out", "err_"})
}

// elementFound confirms a content assertion: the element was there, its content differed.
// Without the element it is a locator problem.
func elementFound(ft *failureText) (float64, int, bool) {
	return 0, -1, !containsAny(ft.lower, []string{"element(s) not found", "element not found", "never found it", "expected to find element"})
}

// raisedInTestCode scores a runtime error by where it was raised: in the suite's code it is a
// test bug; raised in a library with no suite frame shown it is a weaker guess.
func raisedInTestCode(ft *failureText) (float64, int, bool) {
	if ft.frameOrigin() == "test" {
		return 0, -1, true
	}
	return 0.45, -1, true
}

// setupMarkers show a failure happened while preparing a test, not in the test itself.
var setupMarkers = []string{
	`"beforeeach" hook`, `"beforeall" hook`, `"before each" hook`, `"before all" hook`,
	"error at setup of", "failed on setup", "during a `before", "conftest.py", ".setup(",
	"beforeeach", "beforeall", "@before", "setup_method", "setup_class", "setupclass",
}

// inSetupWithoutServerError confirms a setup assertion unless the application answered 5xx:
// a setup step that got a server error found a product bug.
func inSetupWithoutServerError(ft *failureText) (float64, int, bool) {
	inSetup := containsAny(ft.lower, setupMarkers)
	for _, f := range ft.frames {
		inSetup = inSetup || containsAny(asciiLower(f), setupMarkers)
	}
	if !inSetup {
		return 0, -1, false
	}
	s, _ := ft.httpStatus()
	return 0, -1, s < 500
}

// gatewayStatus confirms a gateway error by the status the application answered, or, a
// little less surely, by the status's words alone.
func gatewayStatus(ft *failureText) (float64, int, bool) {
	switch s, at := ft.httpStatus(); s {
	case 502, 503, 504:
		return 0, at, true
	}
	return 0.7, -1, containsAny(ft.lower, []string{"bad gateway", "service unavailable", "gateway time"})
}

// serverErrorStatus confirms a 5xx answer by its status or, a little less surely, its words.
func serverErrorStatus(ft *failureText) (float64, int, bool) {
	if s, at := ft.httpStatus(); s >= 500 {
		return 0, at, true
	}
	if i := strings.Index(ft.lower, "internal server error"); i >= 0 {
		return 0.8, i, true
	}
	return 0, -1, false
}

// anyStatus confirms a status mismatch: the failure names the status the application answered.
func anyStatus(ft *failureText) (float64, int, bool) {
	s, at := ft.httpStatus()
	return 0, at, s != 0
}

// pluginFixtures are the lookups of fixtures that pytest plugins provide, failing because the
// plugin is not installed (lower-case).
var pluginFixtures = []string{"fixture 'mocker' not found", "fixture 'httpx_mock' not found", "fixture 'benchmark' not found", "fixture 'requests_mock' not found", "fixture 'freezer' not found", "fixture 'aioresponses' not found", "fixture 'snapshot' not found", "fixture 'page' not found", "fixture 'xprocess' not found", "fixture 'event_loop' not found", "fixture 'loop' not found"}

// notFoundAfter confirms a variable lookup that failed: the keyword is followed by "not found".
func notFoundAfter(ft *failureText) (float64, int, bool) {
	return 0, -1, strings.Contains(ft.lower, "' not found")
}

// valuesPrintTheSame confirms an assertion whose expected and actual values read the same,
// as testify, JUnit and xUnit print them: the difference is in the values' types.
func valuesPrintTheSame(ft *failureText) (float64, int, bool) {
	e, a, ok := expectedActual(ft.text)
	return 0, -1, ok && e != "" && e == a
}

// expectedActual finds the expected and actual values an assertion prints, in the forms of
// testify ("expected: X" / "actual  : Y", "X (expected)" / "!= Y (actual)"), JUnit
// ("expected:<X> but was:<Y>") and xUnit ("Expected: X" / "Actual:   Y").
func expectedActual(text string) (expected, actual string, ok bool) {
	if i := strings.Index(text, " (expected)"); i >= 0 {
		line := text[strings.LastIndexByte(text[:i], '\n')+1 : i]
		expected = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "Error:"))
		expected = strings.TrimSpace(strings.TrimPrefix(expected, "Not equal:"))
		rest := text[i:]
		if j := strings.Index(rest, "!= "); j >= 0 {
			if k := strings.Index(rest[j:], " (actual)"); k >= 0 {
				return expected, strings.TrimSpace(rest[j+3 : j+k]), true
			}
		}
	}
	lower := asciiLower(text)
	for _, p := range [][2]string{{"expected: ", "actual  : "}, {"expected: ", "actual:   "}, {"expected:<", "but was:<"}} {
		i, j := strings.Index(lower, p[0]), strings.Index(lower, p[1])
		if i < 0 || j < i {
			continue
		}
		e := text[i+len(p[0]):]
		a := text[j+len(p[1]):]
		cut := func(v string) string {
			if n := strings.IndexByte(v, '\n'); n >= 0 {
				v = v[:n]
			}
			if p[0] == "expected:<" {
				if n := strings.Index(v, "> but was"); n >= 0 {
					v = v[:n]
				}
				v = strings.TrimSuffix(v, ">")
			}
			return strings.TrimSpace(v)
		}
		return cut(e), cut(a), true
	}
	return "", "", false
}

// exceptionWithOrigin confirms an exception that is not an assertion and whose stack shows
// where it was raised: the suite's code (a test bug) or, through inAppCode, the product's.
func exceptionWithOrigin(ft *failureText) (float64, int, bool) {
	first, _, _ := strings.Cut(ft.text, "\n")
	lf := asciiLower(first)
	if !looksLikeException(first) || containsAny(lf, []string{"assert", "comparisonfailure", "expect("}) || indexKeyword(lf, "expected ") >= 0 || indexKeyword(lf, "expected:") >= 0 {
		return 0, -1, false
	}
	o := ft.frameOrigin()
	return 0, -1, o == "test" || o == "app"
}

// looksLikeException reports whether a line starts with an exception's type name:
// "java.lang.IllegalStateException: ...", "System.InvalidOperationException : ...",
// "TypeError: ...", "panic: ...".
func looksLikeException(line string) bool {
	line = strings.TrimSpace(line)
	if strings.HasPrefix(line, "panic: ") {
		return true
	}
	end := strings.IndexAny(line, ": ")
	if end <= 0 {
		end = len(line)
	}
	name := line[:end]
	return strings.HasSuffix(name, "Exception") || strings.HasSuffix(name, "Error") && !strings.Contains(name, "Assertion")
}

// wordStartKeywords match only at the start of a word: "expected " is not in "unexpected ".
var wordStartKeywords = map[string]bool{"expected ": true, "expected:": true, "expecting": true}

// indexKeyword finds a keyword in a lower-cased text, at a word's start for those that must be.
func indexKeyword(lower, k string) int {
	if !wordStartKeywords[k] {
		return strings.Index(lower, k)
	}
	for from := 0; ; {
		i := strings.Index(lower[from:], k)
		if i < 0 {
			return -1
		}
		i += from
		if i == 0 || !isLetter(lower[i-1]) {
			return i
		}
		from = i + 1
	}
}

// jvmRuntimeExceptions are the JVM's runtime exceptions (lower-case), which a test's own frame
// raises as often for a value the product returned as for its own mistake.
var jvmRuntimeExceptions = []string{"java.lang.nullpointerexception", "java.lang.classcastexception", "java.lang.illegalstateexception", "java.lang.illegalargumentexception", "java.lang.arrayindexoutofboundsexception", "java.lang.indexoutofboundsexception", "java.lang.stringindexoutofboundsexception", "java.util.nosuchelementexception", "java.lang.numberformatexception", "java.lang.unsupportedoperationexception", "java.lang.arithmeticexception"}

// raisedAtJVMTestFrame confirms a JVM runtime exception whose first frame in the suite's package
// is a test method's own class; one raised in the suite's support code (a page object reading
// its own null field) is the runtime-error rule's.
func raisedAtJVMTestFrame(ft *failureText) (float64, int, bool) {
	root := jvmRootPackage(ft.suite)
	if root == "" {
		return 0, -1, false
	}
	for _, f := range ft.frames {
		if cls, ok := jvmFrameClass(f); ok && strings.HasPrefix(cls, root) {
			return 0, -1, isTestClass(cls) && !isSupportClass(cls)
		}
	}
	return 0, -1, false
}
