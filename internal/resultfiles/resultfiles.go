// Package resultfiles tells the test result files Verdict reads from other files, by their name
// and their first bytes, without parsing them: the report parser uses it to pick the files it
// parses, and the runner to find result files a suite wrote outside its report folders. It
// imports nothing of Verdict's, so that a runner links no parser.
package resultfiles

import (
	"bytes"
	"encoding/xml"
	"io"
	"path"
	"strings"
)

// Kinds of file, by name (Kind).
const (
	XML        = "xml"        // JUnit XML, TestNG's or NUnit 3's results, by their root element
	TRX        = "trx"        // Visual Studio test results
	Allure     = "allure"     // an Allure 2 result, <uuid>-result.json
	Playwright = "playwright" // any other JSON: Playwright's JSON reporter writes one file
)

// Kind sorts a file into the kind of result it may hold by its name alone: "" for a file that
// holds none.
func Kind(name string) string {
	base := strings.ToLower(path.Base(name))
	switch {
	case strings.HasSuffix(base, ".xml"):
		return XML
	case strings.HasSuffix(base, ".trx"):
		return TRX
	case strings.HasSuffix(base, "-result.json"):
		return Allure
	case strings.HasSuffix(base, ".json"):
		return Playwright
	}
	return ""
}

// resultRoots are the root elements of the XML result formats: JUnit's two, TestNG's, NUnit 3's
// and the TRX's.
var resultRoots = map[string]bool{"testsuites": true, "testsuite": true, "testng-results": true, "test-run": true,
	"TestRun": true}

// Looks reports whether data, the whole of a file of kind (Kind), looks like a result file:
// an XML document whose root element is one of the formats', an Allure result's JSON object,
// a JSON object with Playwright's "suites". A file that looks like one may still fail to parse.
func Looks(kind string, data []byte) bool {
	switch kind {
	case XML, TRX:
		return resultRoots[rootElement(data)]
	case Allure:
		return bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("{"))
	case Playwright:
		return LooksLikePlaywright(data)
	}
	return false
}

// LooksLikePlaywright is a cheap test that spares decoding every JSON file of a report folder
// (Allure's generated report alone has one per test): a JSON object that names "suites".
func LooksLikePlaywright(data []byte) bool {
	data = bytes.TrimLeft(data, "\ufeff \t\r\n")
	return bytes.HasPrefix(data, []byte("{")) && bytes.Contains(data, []byte(`"suites"`))
}

// rootElement is the local name of the first element of an XML document, past its declaration,
// comments and doctype; "" when there is none.
func rootElement(data []byte) string {
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = false
	// Any declared encoding: the names sought are ASCII, which the encodings in use keep.
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	for range 64 { // a prolog of more tokens than this is not a result file's
		tok, err := d.RawToken()
		if err != nil {
			return ""
		}
		if start, ok := tok.(xml.StartElement); ok {
			return start.Name.Local
		}
	}
	return ""
}
