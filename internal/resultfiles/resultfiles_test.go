package resultfiles

import "testing"

func TestKindAndLooks(t *testing.T) {
	for _, c := range []struct {
		name, data string
		kind       string
		looks      bool
	}{
		{"junit.xml", `<?xml version="1.0"?><testsuites/>`, XML, true},
		{"TEST-a.XML", "\n<!-- surefire -->\n<testsuite name=\"a\"></testsuite>", XML, true},
		{"r.xml", `<?xml version="1.0" encoding="ISO-8859-1"?><!DOCTYPE x><testng-results/>`, XML, true},
		{"nunit.xml", `<test-run id="2"/>`, XML, true},
		{"pom.xml", `<project/>`, XML, false},
		{"broken.xml", `<<<`, XML, false},
		{"run.trx", `<TestRun xmlns="http://microsoft.com/schemas/VisualStudio/TeamTest/2010"/>`, TRX, true},
		{"x/4f-result.json", ` {"name":"t"}`, Allure, true},
		{"x/4f-result.json", `[]`, Allure, false},
		{"results.json", "\ufeff{\"config\":{},\"suites\":[]}", Playwright, true},
		{"package.json", `{"name":"suite"}`, Playwright, false},
		{"notes.txt", `<testsuites/>`, "", false},
	} {
		kind := Kind(c.name)
		if kind != c.kind || Looks(kind, []byte(c.data)) != c.looks {
			t.Errorf("%s: kind %q, looks %v; want %q, %v", c.name, kind, Looks(kind, []byte(c.data)), c.kind, c.looks)
		}
	}
}

func FuzzLooks(f *testing.F) {
	for _, s := range []string{`<testsuites/>`, `<?xml version="1.0"?><!-- c --><testsuite>`, `{"suites":[]}`, `<`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		for _, k := range []string{XML, TRX, Allure, Playwright, ""} {
			Looks(k, []byte(data)) // must not panic, whatever the bytes
		}
	})
}
