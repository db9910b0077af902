package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"unicode"

	"verdict/internal/domain"
)

// ParseJUnit reads a JUnit XML report: a <testsuites> or a bare <testsuite> root, nested suites
// (up to maxXMLDepth elements deep), and the flavours of pytest, Maven Surefire, Gradle, PHPUnit
// and the JavaScript runners.
//
//   - <failure> or <error> fails a test, <skipped> skips it (its message or text is the reason).
//   - Surefire's reruns: <flakyFailure>/<flakyError> are failed attempts before a pass (flaky),
//     <rerunFailure>/<rerunError> failed reruns after the first failure (failed); both count as
//     retries.
//   - Gradle's test-retry plugin repeats a <testcase> inside its <testsuite>: a repeated
//     classname and name in the same suite element is another attempt of the same test.
//   - The suite is the innermost <testsuite>'s name, or the classname where that name says
//     nothing (missing, pytest's default "pytest", or an engine of the JUnit Platform console
//     launcher: "JUnit Jupiter", "JUnit Vintage").
//   - A JVM exception keeps its type, message and (bounded) stack trace.
//   - A testcase's <system-out> and <system-err> may name attachments, one [[ATTACHMENT|path]]
//     each (Jenkins' convention, which Playwright's junit reporter follows).
//
// The file parses whole or not at all; ErrUnrecognized when the root is not a test suite.
func ParseJUnit(data []byte) ([]domain.TestResult, error) { return parseJUnit(data, maxTests) }

// junitCase is a <testcase>'s attempts in document order.
type junitCase struct {
	name, suite string
	attempts    []attempt
}

// junitScope is one open <testsuite> element; seen finds a repeated testcase (Gradle retries).
type junitScope struct {
	name string
	seen map[[2]string]int // classname, name → index in cases
}

func parseJUnit(data []byte, limit int) ([]domain.TestResult, error) {
	dec := newXMLDecoder(data)
	var (
		scopes  []junitScope
		cases   []junitCase
		rooted  bool
		limited bool
	)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			if !rooted {
				return nil, ErrUnrecognized
			}
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if !rooted {
				if t.Name.Local != "testsuites" && t.Name.Local != "testsuite" {
					return nil, ErrUnrecognized
				}
				rooted = true
			}
			switch t.Name.Local {
			case "testsuite":
				scopes = append(scopes, junitScope{name: attr(t, "name")})
			case "testcase":
				c, err := readTestcase(dec, t)
				if err != nil {
					return nil, err
				}
				suite := c.suite
				if len(scopes) > 0 {
					if s := scopes[len(scopes)-1].name; !engineSuite(s) {
						suite = s
					}
				}
				key := [2]string{c.suite, c.name}
				var top *junitScope
				if len(scopes) > 0 {
					top = &scopes[len(scopes)-1]
					if i, ok := top.seen[key]; ok {
						cases[i].attempts = append(cases[i].attempts, c.attempts...)
						continue
					}
				}
				if len(cases) == limit {
					limited = true
					continue
				}
				if top != nil {
					if top.seen == nil {
						top.seen = map[[2]string]int{}
					}
					top.seen[key] = len(cases)
				}
				cases = append(cases, junitCase{name: c.name, suite: suite, attempts: c.attempts})
			case "testsuites":
			default:
				// Properties, system-out and anything else a runner adds.
				if err := dec.Skip(); err != nil {
					return nil, err
				}
			}
		case xml.EndElement:
			if t.Name.Local == "testsuite" && len(scopes) > 0 {
				scopes = scopes[:len(scopes)-1]
			}
		}
	}
	if !rooted {
		return nil, ErrUnrecognized
	}
	out := make([]domain.TestResult, len(cases))
	for i, c := range cases {
		out[i] = settle(c.name, c.suite, c.attempts)
	}
	if limited {
		return out, ErrLimit
	}
	return out, nil
}

// junitOutcome is the shape of <failure>, <error>, <skipped> and Surefire's rerun elements.
type junitOutcome struct {
	Message    string `xml:"message,attr"`
	Type       string `xml:"type,attr"`
	Text       string `xml:",chardata"`
	StackTrace string `xml:"stackTrace"`
}

// text is the outcome's explanation. An exception of the JVM's (a qualified class name as its
// type) reads as Java users read it: its type, its message and its stack (bounded), which the
// body holds as the JVM printed it ("type: message" then the "at" frames); the type is put
// first when the body leaves it out. Other runners: the message, else the body.
func (o junitOutcome) text() string {
	if jvmException(o.Type) {
		head := strings.TrimSpace(o.Message)
		if !strings.HasPrefix(head, o.Type) {
			head = strings.TrimSuffix(o.Type+": "+head, ": ")
		}
		body := strings.TrimSpace(o.Text)
		if body == "" {
			body = strings.TrimSpace(o.StackTrace)
		}
		switch {
		case body == "":
			return errorText(head)
		case strings.HasPrefix(body, o.Type):
			return errorText(body)
		}
		return errorText(head + "\n" + body)
	}
	for _, s := range []string{o.Message, o.Text, o.StackTrace, o.Type} {
		if t := errorText(s); t != "" {
			return t
		}
	}
	return ""
}

// jvmException tells a JVM exception's class name (java.lang.NumberFormatException,
// org.opentest4j.AssertionFailedError, kotlin.KotlinNullPointerException): dotted
// identifiers, the last one a class's.
func jvmException(t string) bool {
	parts := strings.Split(t, ".")
	if len(parts) < 2 {
		return false
	}
	for _, p := range parts {
		if p == "" || strings.ContainsFunc(p, func(r rune) bool {
			return !(r == '_' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r))
		}) {
			return false
		}
	}
	last := parts[len(parts)-1]
	return unicode.IsUpper(rune(last[0]))
}

// engineSuite tells a <testsuite> name that names the runner, not the tests: pytest's default,
// and the JUnit Platform console launcher's engines.
func engineSuite(name string) bool {
	switch name {
	case "", "pytest", "JUnit Jupiter", "JUnit Vintage", "JUnit Platform Suite":
		return true
	}
	return false
}

// readTestcase consumes one <testcase> element; suite holds its classname.
func readTestcase(dec *xmlDecoder, start xml.StartElement) (junitCase, error) {
	c := junitCase{name: attr(start, "name"), suite: attr(start, "classname")}
	if c.name == "" {
		c.name = c.suite
	}
	final := attempt{status: domain.TestPassed}
	var earlier, reruns []attempt
	for {
		tok, err := dec.Token()
		if err != nil {
			return c, err
		}
		switch t := tok.(type) {
		case xml.EndElement:
			// The decoder checks nesting, so the first unmatched end element is the testcase's.
			// Its time is taken as the last attempt's: reruns carry no time of their own.
			c.attempts = append(append(earlier, final), reruns...)
			c.attempts[len(c.attempts)-1].durationMs = secondsToMillis(attr(start, "time"))
			return c, nil
		case xml.StartElement:
			var o junitOutcome
			switch t.Name.Local {
			case "failure", "error", "skipped", "flakyFailure", "flakyError", "rerunFailure", "rerunError":
				if err := dec.decodeElement(&o, &t); err != nil {
					return c, err
				}
			case "system-out", "system-err":
				text, err := dec.text()
				if err != nil {
					return c, err
				}
				final.attachments = junitAttachments(text, final.attachments)
				continue
			default:
				if err := dec.Skip(); err != nil {
					return c, err
				}
				continue
			}
			failed := attempt{status: domain.TestFailed, err: o.text()}
			switch t.Name.Local {
			case "failure", "error":
				if final.status != domain.TestFailed { // the first failure explains best
					final.status, final.err = domain.TestFailed, failed.err
				}
			case "skipped":
				if final.status == domain.TestPassed {
					final.status, final.err = domain.TestSkipped, errorText(firstOf(o.Message, o.Text))
				}
			case "flakyFailure", "flakyError":
				earlier = append(earlier, failed)
			case "rerunFailure", "rerunError":
				reruns = append(reruns, failed)
			}
		}
	}
}

// maxXMLDepth bounds element nesting. The XML decoder keeps every open element in memory, so
// a file of nothing but opening tags would otherwise cost far more memory than its size.
// JUnit files nest a few levels; PHPUnit's data providers are the deepest seen, at five.
const maxXMLDepth = 64

var errXMLDepth = errors.New("XML elements nested too deeply")

// newXMLDecoder reads a results file's XML, sanitized. Files declared in another charset are
// nearly always ASCII in fact; they are read as they are, and a real non-UTF-8 byte fails the
// file rather than being ignored unseen.
func newXMLDecoder(data []byte) *xmlDecoder {
	dec := &xmlDecoder{Decoder: xml.NewDecoder(bytes.NewReader(sanitizeXML(data)))}
	dec.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	return dec
}

// xmlDecoder is an xml.Decoder whose Token and Skip refuse nesting past maxXMLDepth.
type xmlDecoder struct {
	*xml.Decoder
	depth int
}

func (d *xmlDecoder) Token() (xml.Token, error) {
	tok, err := d.Decoder.Token()
	switch tok.(type) {
	case xml.StartElement:
		if d.depth++; d.depth > maxXMLDepth {
			return nil, errXMLDepth
		}
	case xml.EndElement:
		d.depth--
	}
	return tok, err
}

func (d *xmlDecoder) Skip() error {
	for depth := 0; ; {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		switch tok.(type) {
		case xml.StartElement:
			depth++
		case xml.EndElement:
			if depth == 0 {
				return nil
			}
			depth--
		}
	}
}

// text consumes the element just opened and returns its text (elements inside it are skipped,
// within maxXMLDepth as Skip).
func (d *xmlDecoder) text() (string, error) {
	var b strings.Builder
	for depth := 0; ; {
		tok, err := d.Token()
		if err != nil {
			return "", err
		}
		switch t := tok.(type) {
		case xml.CharData:
			if depth == 0 {
				b.Write(t)
			}
		case xml.StartElement:
			depth++
		case xml.EndElement:
			if depth == 0 {
				return b.String(), nil
			}
			depth--
		}
	}
}

// decodeElement is DecodeElement, which reads the element whole (the decoder bounds its
// depth itself) and so closes it at the same depth it was opened.
func (d *xmlDecoder) decodeElement(v any, start *xml.StartElement) error {
	err := d.Decoder.DecodeElement(v, start)
	if err == nil {
		d.depth--
	}
	return err
}

func attr(e xml.StartElement, name string) string {
	for _, a := range e.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// sanitizeXML makes runner output that XML 1.0 forbids parseable: terminal colour sequences are
// removed and other control characters become spaces. Runners that copy raw test output into
// <failure> or <system-out> write them often, and one would otherwise lose the whole file.
func sanitizeXML(data []byte) []byte {
	bad := func(r rune) bool { return r < 0x20 && r != '\t' && r != '\n' && r != '\r' }
	if bytes.IndexFunc(data, bad) < 0 {
		return data
	}
	return bytes.Map(func(r rune) rune {
		if bad(r) {
			return ' '
		}
		return r
	}, []byte(stripANSI(string(data))))
}

// firstOf is the first of ss that is not blank.
func firstOf(ss ...string) string {
	for _, s := range ss {
		if strings.TrimSpace(s) != "" {
			return s
		}
	}
	return ""
}
