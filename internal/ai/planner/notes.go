package planner

import (
	"slices"
	"strconv"
	"strings"
)

// Words in a step that call for a wait.
var (
	navigationStep = term{"navigation", []string{
		"navigate", "open", "visit", "go to", "goes to", "redirect", "reload", "refresh", "submit",
		"return to", "back to", "land on", "lands on", "load", "log in", "login", "sign in", "log out",
		"logout", "sign out", "url",
	}}
	asyncStep = term{"asynchronous", []string{
		"wait", "loading", "spinner", "appear", "disappear", "async", "asynchronous", "background",
		"eventually", "notification", "toast", "email", "e mail", "upload", "download", "process",
		"processing", "sync", "synchronise", "synchronize", "poll", "queue", "job", "webhook",
		"real time", "live", "progress", "seconds", "minutes",
	}}
)

// waitMatcher finds navigationStep (0) and asyncStep (1).
var waitMatcher = newMatcher([]term{navigationStep, asyncStep})

// dataKinds are the kinds of test data a step can need.
var dataKinds = []term{
	{"user accounts", []string{"user", "account", "customer", "profile", "admin", "member", "credential", "password", "login", "log in", "sign in", "role"}},
	{"payment details", []string{"credit card", "debit card", "card number", "card", "payment", "coupon", "voucher", "iban", "bank"}},
	{"records", []string{"data", "dataset", "order", "product", "item", "record", "entry", "entries"}},
	{"files", []string{"file", "upload", "download", "csv", "pdf", "xlsx", "attachment", "import", "export"}},
	{"e-mail", []string{"email", "e mail", "inbox", "mail"}},
}

var dataMatcher = newMatcher(dataKinds)

// caseNotes is what the implementation notes say of one case.
type caseNotes struct {
	navigation, async []int // step numbers, from 1
	data              []string
	dataSteps         []int
	dataPrecondition  bool
	fixtures          []string // fixture names of its preconditions
	noExpected        []int    // steps without an expected result
}

func readSteps(c Case) caseNotes {
	var n caseNotes
	kinds := map[string]bool{}
	for i, s := range c.Steps {
		ws := words(s.Action + " . " + s.Expected)
		wait := waitMatcher.find(ws)
		if wait[0] {
			n.navigation = append(n.navigation, i+1)
		}
		if wait[1] {
			n.async = append(n.async, i+1)
		}
		found := false
		for k, ok := range dataMatcher.find(ws) {
			if ok {
				kinds[dataKinds[k].name] = true
				found = true
			}
		}
		if found {
			n.dataSteps = append(n.dataSteps, i+1)
		}
		if oneLine(s.Expected) == "" {
			n.noExpected = append(n.noExpected, i+1)
		}
	}
	for k, ok := range dataMatcher.find(words(c.Preconditions)) {
		if ok {
			kinds[dataKinds[k].name] = true
			n.dataPrecondition = true
		}
	}
	for _, k := range dataKinds {
		if kinds[k.name] {
			n.data = append(n.data, k.name)
		}
	}
	return n
}

// stepList is "step 2" or "steps 1, 3 and 4".
func stepList(steps []int) string {
	s := make([]string, len(steps))
	for i, n := range steps {
		s[i] = strconv.Itoa(n)
	}
	if len(s) == 1 {
		return "step " + s[0]
	}
	return "steps " + andList(s)
}

// preconditions splits a case's preconditions into one item a line, without list markers.
func preconditions(c Case) []string {
	var out []string
	for _, line := range strings.FieldsFunc(strings.ToValidUTF8(c.Preconditions, "\uFFFD"), func(r rune) bool { return r == '\n' || r == '\r' || r == '\u2028' }) {
		line = oneLine(line)
		line = strings.TrimLeft(line, "-*•+ ")
		if i := strings.IndexAny(line, ".)"); i > 0 && i <= 3 && strings.Trim(line[:i], "0123456789") == "" {
			line = strings.TrimSpace(line[i+1:])
		}
		if line != "" {
			out = append(out, line)
		}
	}
	return out
}

var stopWords = []string{"a", "an", "the", "is", "are", "was", "were", "be", "been", "has", "have", "had",
	"with", "and", "or", "of", "to", "at", "for", "as", "that", "this", "there", "should", "must", "already"}

// maxFixtureWords bounds the words of a fixture's name.
const maxFixtureWords = 4

// fixtureNames names a fixture for every distinct precondition of the cases, in the
// language's convention (userLoggedIn, user_logged_in), from the precondition's first
// words; a number tells apart two that would share a name.
func fixtureNames(cases []Case, l lang) map[string]string {
	out := map[string]string{}
	taken := map[string]bool{}
	for _, c := range cases {
		for _, p := range preconditions(c) {
			k := key(p)
			if _, ok := out[k]; ok {
				continue
			}
			var ws []string
			for _, w := range asciiWords(p) {
				if !slices.Contains(stopWords, w) && len(ws) < maxFixtureWords {
					ws = append(ws, w)
				}
			}
			if len(ws) == 0 || ws[0][0] >= '0' && ws[0][0] <= '9' {
				ws = append([]string{"given"}, ws...)
			}
			name := identifier(ws, l)
			base := name
			for i := 2; taken[name]; i++ {
				name = base + sep(l) + strconv.Itoa(i)
			}
			taken[name] = true
			out[k] = name
		}
	}
	return out
}

// identifier joins words as a name in code: camelCase, or snake_case in Python.
func identifier(ws []string, l lang) string {
	if l == python {
		return strings.Join(ws, "_")
	}
	var b strings.Builder
	for i, w := range ws {
		if i == 0 {
			b.WriteString(w)
		} else {
			b.WriteString(capitalize(w))
		}
	}
	return b.String()
}

func sep(l lang) string {
	if l == python {
		return "_"
	}
	return ""
}

// maxTestNameWords bounds the words of a test's function or method name.
const maxTestNameWords = 8

var javaKeywords = []string{"abstract", "assert", "boolean", "break", "byte", "case", "catch", "char", "class", "const",
	"continue", "default", "do", "double", "else", "enum", "extends", "final", "finally", "float", "for", "goto", "if",
	"implements", "import", "instanceof", "int", "interface", "long", "native", "new", "package", "private", "protected",
	"public", "return", "short", "static", "strictfp", "super", "switch", "synchronized", "this", "throw", "throws",
	"transient", "try", "void", "volatile", "while", "true", "false", "null", "var", "record", "yield"}

// testName is the name of a case's test in its spec: the title itself for the JavaScript
// runners, test_<words> in Python, a camelCase method in Java; taken holds the names already
// used in the same spec.
func testName(title string, l lang, taken map[string]bool) string {
	var name string
	switch l {
	case typeScript:
		name = clip(oneLine(title), 120)
		if name == "" {
			name = "untitled"
		}
		base := name
		for i := 2; taken[name]; i++ {
			name = base + " (" + strconv.Itoa(i) + ")"
		}
	default:
		ws := asciiWords(title)
		if len(ws) > maxTestNameWords {
			ws = ws[:maxTestNameWords]
		}
		if l == python {
			name = "test_" + strings.Join(ws, "_")
			if len(ws) == 0 {
				name = "test_case"
			}
		} else {
			if len(ws) == 0 || ws[0][0] >= '0' && ws[0][0] <= '9' {
				ws = append([]string{"test"}, ws...)
			}
			name = identifier(ws, java)
			if slices.Contains(javaKeywords, name) {
				name += "Test"
			}
		}
		base := name
		for i := 2; taken[name]; i++ {
			name = base + sep(l) + strconv.Itoa(i)
		}
	}
	taken[name] = true
	return name
}
