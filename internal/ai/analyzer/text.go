package analyzer

import "strings"

// SplitError splits a test's error text into its message and its stack: the stack starts at
// the first stack frame or Python traceback header. Reports that keep the two apart need not
// call it.
func SplitError(text string) (message, stack string) {
	for i := 0; i < len(text); {
		end := strings.IndexByte(text[i:], '\n')
		if end < 0 {
			end = len(text) - i
		}
		line := strings.TrimSpace(text[i : i+end])
		if isRawFrame(line) || strings.HasPrefix(line, "Traceback (most recent call last)") {
			return strings.TrimRight(text[:i], "\n"), text[i:]
		}
		i += end + 1
	}
	return text, ""
}

// isRawFrame reports whether a trimmed raw line is a JavaScript, Java or Python stack frame.
func isRawFrame(line string) bool {
	if strings.HasPrefix(line, `File "`) {
		return true
	}
	rest, ok := strings.CutPrefix(line, "at ")
	return ok && strings.ContainsAny(rest, "(:.")
}

// maxRuleFrames are the frames kept for telling test code from application and library code:
// enough to pass a JVM exception's runtime frames (a parse error is thrown four frames below
// the product's call).
const maxRuleFrames = 12

// failureText is what the rules read of one failure: the message and the stack's explanatory
// lines (exception chains, pytest's "E" lines), without frames, whose function names would
// match keywords ("Timeout._onTimeout"); the first frames are kept apart.
type failureText struct {
	text   string
	lower  string // text with ASCII lower-cased: same byte offsets
	frames []string
	// suite is the failed test's suite (a JVM test class, a Go package), when the caller knows
	// it: a frame in the suite's own package that is not a test class is the product's code.
	suite string

	status      int // HTTP status the failure shows the application answered, 0: none
	statusAt    int
	statusKnown bool
}

func newFailureText(message, stack string) *failureText {
	ft := &failureText{}
	var b strings.Builder
	ft.read(&b, clip(message, MaxMessageBytes), false)
	stack = clip(stack, MaxStackBytes)
	ft.read(&b, stack, strings.Contains(stack, "\nE   ") || strings.HasPrefix(stack, "E   "))
	ft.text = b.String()
	ft.lower = asciiLower(ft.text)
	return ft
}

// read adds the explanatory lines of s to b and its frames to ft.frames. In pytest's report of
// a failure, which shows the test's source, only the "E" lines are the error.
func (ft *failureText) read(b *strings.Builder, s string, pytest bool) {
	afterPythonFrame := false
	for s != "" {
		var line string
		line, s, _ = strings.Cut(s, "\n")
		t := strings.TrimSpace(line)
		keep := false
		switch {
		case t == "":
		case isRawFrame(t):
			ft.addFrame(t)
			afterPythonFrame = strings.HasPrefix(t, `File "`)
			continue
		case isGoFrameFile(t):
			ft.addFrame(t)
			continue
		case isPytestLocation(t):
			ft.addFrame(t)
			keep = true
		case pytest:
			if t == "E" || strings.HasPrefix(t, "E ") {
				t, keep = strings.TrimSpace(t[1:]), true
			}
		case afterPythonFrame:
			// the source line under a traceback frame is code, not the error
		default:
			keep = true
		}
		afterPythonFrame = false
		if keep {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(t)
		}
	}
}

func (ft *failureText) addFrame(f string) {
	if len(ft.frames) < maxRuleFrames {
		ft.frames = append(ft.frames, f)
	}
}

// isPytestLocation reports whether a line is pytest's "path.py:12: ErrorType" or "path.py:12".
func isPytestLocation(t string) bool {
	i := strings.Index(t, ".py:")
	if i <= 0 || strings.ContainsAny(t[:i], " \t\"'") {
		return false
	}
	rest := t[i+4:]
	n := len(rest) - len(strings.TrimLeft(rest, "0123456789"))
	return n > 0 && (n == len(rest) || rest[n] == ':')
}

// lineAt returns the line of text around byte offset at, trimmed and bounded, for evidence.
func lineAt(text string, at int) string {
	start := strings.LastIndexByte(text[:at], '\n') + 1
	end := strings.IndexByte(text[at:], '\n')
	if end < 0 {
		end = len(text)
	} else {
		end += at
	}
	return boundRunes(strings.TrimSpace(text[start:end]), maxMatchedBytes)
}

// maxMatchedBytes bounds the text quoted as a rule's match.
const maxMatchedBytes = 200

// boundRunes cuts s to at most max bytes on a character boundary, marking the cut.
func boundRunes(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return clip(s, max-len("…")) + "…"
}

// libraryMarkers name frames of runtimes, test libraries and dependencies, not of the suite.
var libraryMarkers = []string{
	"node_modules", "node:", "internal/", "site-packages", "dist-packages", "/usr/lib/", "/lib/python",
	"_pytest", "pluggy", "java.", "javax.", "jdk.", "sun.", "kotlin.", "org.junit", "junit.",
	"org.openqa", "io.restassured", "org.springframework", "org.assertj", "org.hamcrest",
	"com.fasterxml", "org.apache", "org.testng", "org.gradle", "org.mockito", "cypress_runner",
	"__cypress", "playwright-core", "@playwright",
}

// testMarkers name files and functions of test code (matched lower-cased); testClassMarkers
// name JVM test classes (matched as written: "IT.java" is a test, "Credit.java" is not).
var (
	testMarkers = []string{
		".spec.", ".test.", ".cy.", "/tests/", "/test/", "/e2e/", "/cypress/", "/specs/", "\\tests\\",
		"/test_", "\\test_", "in test_", "_test.py", "conftest.py", "/src/test/", "steps.", "stepdefs",
		"/pages/", ".page.", "page.java", "/fixtures",
	}
	testClassMarkers = []string{"Test.java", "Tests.java", "IT.java", "Test.kt", "Tests.kt", "IT.kt", "Spec.groovy", "Spec.kt"}
)

// frameOrigin says where a failure was raised: "test", "app" (code that is neither the suite
// nor a library) or "" (only library frames, or none). JVM frames are judged by the suite's
// package and Go frames by their file, when the failure has them.
func (ft *failureText) frameOrigin() string {
	if o, ok := ft.packageOrigin(); ok {
		return o
	}
	for _, f := range ft.frames {
		l := asciiLower(f)
		if containsAny(l, testMarkers) || strings.HasPrefix(l, "test_") || containsAny(f, testClassMarkers) {
			return "test"
		}
		if !containsAny(l, libraryMarkers) {
			return "app"
		}
	}
	return ""
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// isGoFrameFile reports whether a trimmed line is the file line of a Go stack frame:
// "/src/pkg/file.go:123 +0x1f".
func isGoFrameFile(t string) bool {
	i := strings.Index(t, ".go:")
	if i <= 0 || strings.ContainsAny(t[:i], " \t") {
		return false
	}
	rest := t[i+4:]
	n := len(rest) - len(strings.TrimLeft(rest, "0123456789"))
	return n > 0 && (n == len(rest) || strings.HasPrefix(rest[n:], " +0x"))
}

// goLibraryMarkers are the paths of Go's runtime, standard library and module cache.
var goLibraryMarkers = []string{"/src/runtime/", "/src/testing/", "/libexec/src/", "/go/src/", "/pkg/mod/", "/usr/lib/go", "/.gimme/", "<autogenerated>"}

// packageOrigin judges the frames a package tells apart: Go frames by their file (a _test.go
// file is the suite's, the runtime and module cache are libraries, the rest is the product),
// JVM frames against the suite's root package (a test class of it is the suite, its other
// classes the product, every other package a library). ok is false when the frames are of
// neither kind or the suite names no JVM package.
func (ft *failureText) packageOrigin() (origin string, ok bool) {
	root := jvmRootPackage(ft.suite)
	for _, f := range ft.frames {
		if isGoFrameFile(f) {
			ok = true
			file := f[:strings.Index(f, ".go:")+3]
			switch {
			case strings.HasSuffix(file, "_test.go"):
				return "test", true
			case containsAny(file, goLibraryMarkers):
				continue
			default:
				return "app", true
			}
		}
		cls, isJVM := jvmFrameClass(f)
		if !isJVM || root == "" {
			continue
		}
		ok = true
		if !strings.HasPrefix(cls, root) {
			continue // the JDK, the test framework or another library
		}
		if isTestClass(cls) {
			return "test", true
		}
		return "app", true
	}
	return "", ok
}

// jvmFrameClass returns the class of a JVM frame, "at org.acme.Cart.add(Cart.java:12)" gives
// "org.acme.Cart", without a "java.base/" module prefix.
func jvmFrameClass(f string) (string, bool) {
	rest, ok := strings.CutPrefix(f, "at ")
	if !ok {
		return "", false
	}
	open := strings.IndexByte(rest, '(')
	if open <= 0 || !strings.Contains(rest[open:], ".java:") && !strings.Contains(rest[open:], ".kt:") && !strings.Contains(rest[open:], "Native Method") && !strings.Contains(rest[open:], "Unknown Source") {
		return "", false
	}
	name := rest[:open]
	if i := strings.IndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	dot := strings.LastIndexByte(name, '.')
	if dot <= 0 {
		return "", false
	}
	return name[:dot], true
}

// jvmRootPackage is the first three segments of a test class's package ("org.apache.commons"
// of "org.apache.commons.lang3.math.NumberUtilsTest"), or two when it has only two; "" when
// the suite is no qualified class name.
func jvmRootPackage(suite string) string {
	if suite == "" || strings.ContainsAny(suite, " /\\:") {
		return ""
	}
	parts := strings.Split(suite, ".")
	if len(parts) < 3 {
		return ""
	}
	pkg := parts[:len(parts)-1]
	if len(pkg) > 3 {
		pkg = pkg[:3]
	}
	return strings.Join(pkg, ".") + "."
}

// isTestClass reports whether a JVM class (or one nested in it) is the suite's code by name:
// a test class (FooTest, FooTests, FooTestCase, FooIT, FooSpec, TestFoo) or its support (page
// objects, step definitions, fixtures).
func isTestClass(cls string) bool {
	if isSupportClass(cls) {
		return true
	}
	name := simpleClassName(cls)
	for _, s := range []string{"Test", "Tests", "TestCase", "IT", "Spec"} {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return strings.HasPrefix(name, "Test")
}

// isSupportClass reports whether a JVM class is the suite's support code by its package or
// name: page objects, step definitions, fixtures, test utilities.
func isSupportClass(cls string) bool {
	if containsAny(asciiLower(cls), []string{".pages.", ".steps.", ".stepdefs.", ".fixtures.", ".testutil"}) {
		return true
	}
	name := simpleClassName(cls)
	for _, s := range []string{"Page", "Steps", "StepDefinitions", "Fixture"} {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// simpleClassName is a JVM class's own name, without its package or nested classes.
func simpleClassName(cls string) string {
	name := cls[strings.LastIndexByte(cls, '.')+1:]
	if i := strings.IndexByte(name, '$'); i >= 0 {
		name = name[:i]
	}
	return name
}
