package report

import (
	"fmt"
	"io/fs"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"verdict/internal/domain"
)

// An attachment's path is one in the run's reports: relative to its result file's folder, or
// the container's absolute path under /app; never a path that leaves the reports.
func TestAttachmentPath(t *testing.T) {
	for _, c := range []struct{ file, written, want string }{
		{"results/junit.xml", "../test-results/a/shot.png", "test-results/a/shot.png"},
		{"results/junit.xml", "shot.png", "results/shot.png"},
		{"results/junit.xml", "./a/./b/../shot.png", "results/a/shot.png"},
		{"allure-results/x-result.json", "abc-attachment.png", "allure-results/abc-attachment.png"},
		{"results/pw.json", "/app/test-results/a/trace.zip", "test-results/a/trace.zip"},
		{"results/pw.json", "/app/test-results//a/./trace.zip", "test-results/a/trace.zip"},
		{"results/junit.xml", "../../etc/passwd", ""},
		{"results/junit.xml", "../..", ""},
		{"results/junit.xml", "..", ""},
		{"junit.xml", "../x.png", ""},
		{"results/pw.json", "/etc/passwd", ""},
		{"results/pw.json", "/app/../etc/passwd", ""},
		{"results/pw.json", "/app/../../app/x", ""},
		{"results/pw.json", "/application/x.png", ""},
		{"results/pw.json", "/app/", ""},
		{"results/pw.json", "/app", ""},
		{"results/junit.xml", `..\..\x.png`, ""},
		{"results/junit.xml", "C:/x.png", "results/C:/x.png"}, // a name like any other: it must exist
		{"results/junit.xml", strings.Repeat("a/", 600) + "x", ""},
	} {
		got, ok := AttachmentPath(c.file, c.written)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("AttachmentPath(%q, %q) = %q, %v; want %q", c.file, c.written, got, ok, c.want)
		}
	}
}

const pwAttachments = `{"config": {}, "suites": [{"title": "checkout.spec.ts", "specs": [{"title": "pays", "tests": [{
  "projectName": "chromium", "expectedStatus": "passed", "status": "unexpected", "results": [
    {"status": "failed", "duration": 10, "error": {"message": "boom"}, "attachments": [
      {"name": "screenshot", "contentType": "image/png", "path": "/app/test-results/pays/test-failed-1.png"},
      {"name": "trace", "contentType": "application/zip", "path": "/app/test-results/pays/trace.zip"},
      {"name": "inline", "contentType": "text/plain", "body": "aGk="},
      {"name": "gone", "contentType": "image/png", "path": "/app/test-results/pays/missing.png"},
      {"name": "passwd", "contentType": "text/plain", "path": "/etc/passwd"},
      {"name": "escape", "contentType": "text/plain", "path": "/app/../etc/passwd"},
      {"name": "up", "contentType": "text/plain", "path": "../../outside.txt"},
      {"name": "link", "contentType": "text/plain", "path": "/app/test-results/pays/link.txt"},
      {"name": "folder", "contentType": "text/plain", "path": "/app/test-results/pays"}
    ]},
    {"status": "failed", "duration": 12, "error": {"message": "boom again"}, "attachments": [
      {"name": "trace", "contentType": "application/zip", "path": "/app/test-results/pays-retry1/trace.zip"},
      {"name": "video", "contentType": "video/webm", "path": "/app/test-results/pays-retry1/video.webm"}
    ]}
  ]}]}]}]}`

// ParseFS keeps a test's attachments that are files among the run's reports, by their path
// there, each with the attempt that left it; the rest are dropped.
func TestParseFSAttachments(t *testing.T) {
	file := &fstest.MapFile{Data: []byte("x")}
	fsys := fstest.MapFS{
		"results/pw.json":                          {Data: []byte(pwAttachments)},
		"test-results/pays/test-failed-1.png":      file,
		"test-results/pays/trace.zip":              file,
		"test-results/pays/link.txt":               {Data: []byte("../../../etc/passwd"), Mode: fs.ModeSymlink},
		"test-results/pays-retry1/trace.zip":       file,
		"test-results/pays-retry1/video.webm":      file,
		"outside.txt":                              file,
		"junit/results.xml":                        {Data: []byte(junitAttachmentsXML)},
		"junit/shot.png":                           file,
		"allure-results/0b1c-result.json":          {Data: []byte(allureAttachmentsJSON)},
		"allure-results/5e6f-attachment.png":       file,
		"allure-results/7a8b-attachment.txt":       file,
		"allure-results/nested/9c0d-attachment.md": file,
	}
	tests, err := ParseFS(fsys)
	if err != nil || len(tests) != 1 {
		t.Fatalf("%d tests, %v", len(tests), err)
	}
	want := []domain.Attachment{
		{Name: "screenshot", ContentType: "image/png", Path: "test-results/pays/test-failed-1.png"},
		{Name: "trace", ContentType: "application/zip", Path: "test-results/pays/trace.zip"},
		{Name: "trace", ContentType: "application/zip", Path: "test-results/pays-retry1/trace.zip", Retry: 1},
		{Name: "video", ContentType: "video/webm", Path: "test-results/pays-retry1/video.webm", Retry: 1},
	}
	if got := tests[0].Attachments; !reflect.DeepEqual(got, want) {
		t.Fatalf("attachments:\n got %+v\nwant %+v", got, want)
	}
	if !want[1].IsTrace() || want[0].IsTrace() {
		t.Fatal("IsTrace")
	}

	// JUnit alone: [[ATTACHMENT|...]] in a testcase's output, relative to the XML's folder.
	delete(fsys, "results/pw.json")
	delete(fsys, "allure-results/0b1c-result.json")
	tests, err = ParseFS(fsys)
	if err != nil || len(tests) != 2 {
		t.Fatalf("junit: %d tests, %v", len(tests), err)
	}
	want = []domain.Attachment{
		{Name: "test-failed-1.png", ContentType: "image/png", Path: "test-results/pays/test-failed-1.png"},
		{Name: "trace.zip", ContentType: "application/zip", Path: "test-results/pays/trace.zip"},
		{Name: "shot.png", ContentType: "image/png", Path: "junit/shot.png"},
	}
	if got := tests[0].Attachments; !reflect.DeepEqual(got, want) || tests[1].Attachments != nil {
		t.Fatalf("junit attachments:\n got %+v, %+v\nwant %+v", got, tests[1].Attachments, want)
	}
	if !want[1].IsTrace() {
		t.Fatal("a JUnit trace.zip is a trace")
	}

	// Allure alone: the result's and its steps' attachments, by source in the results folder.
	fsys["allure-results/0b1c-result.json"] = &fstest.MapFile{Data: []byte(allureAttachmentsJSON)}
	tests, err = ParseFS(fsys)
	if err != nil || len(tests) != 1 {
		t.Fatalf("allure: %d tests, %v", len(tests), err)
	}
	want = []domain.Attachment{
		{Name: "screenshot", ContentType: "image/png", Path: "allure-results/5e6f-attachment.png"},
		{Name: "log", ContentType: "text/plain", Path: "allure-results/7a8b-attachment.txt"},
		{Name: "context", ContentType: "text/markdown", Path: "allure-results/nested/9c0d-attachment.md"},
	}
	if got := tests[0].Attachments; !reflect.DeepEqual(got, want) {
		t.Fatalf("allure attachments:\n got %+v\nwant %+v", got, want)
	}
}

const junitAttachmentsXML = `<testsuites><testsuite name="checkout.spec.ts">
<testcase name="pays" classname="checkout.spec.ts"><failure message="boom">boom</failure>
<system-out>log line
[[ATTACHMENT|../test-results/pays/test-failed-1.png]]
[[ATTACHMENT|../test-results/pays/trace.zip]]
[[ATTACHMENT|../../etc/passwd]]
[[ATTACHMENT|/etc/passwd]]
[[ATTACHMENT|../test-results/pays/link.txt]]
</system-out><system-err><![CDATA[[[ATTACHMENT|shot.png]]]]></system-err></testcase>
<testcase name="lists" classname="checkout.spec.ts"><system-out>[[ATTACHMENT|</system-out></testcase>
</testsuite></testsuites>`

const allureAttachmentsJSON = `{"uuid": "0b1c", "historyId": "h1", "name": "pays", "status": "failed",
  "statusDetails": {"message": "boom"}, "start": 1, "stop": 2,
  "attachments": [{"name": "screenshot", "source": "5e6f-attachment.png", "type": "image/png"},
    {"name": "escape", "source": "../../etc/passwd", "type": "text/plain"},
    {"name": "gone", "source": "ffff-attachment.png", "type": "image/png"}],
  "steps": [{"name": "step", "attachments": [{"name": "log", "source": "7a8b-attachment.txt", "type": "text/plain"}],
    "steps": [{"name": "inner", "attachments": [{"name": "context", "source": "nested/9c0d-attachment.md", "type": "text/markdown"}]}]}]}`

// A test keeps at most maxAttachments, its texts bounded.
func TestAttachmentBounds(t *testing.T) {
	var b strings.Builder
	b.WriteString(`<testsuite><testcase name="t"><system-out>`)
	for i := range maxAttachments + 5 {
		fmt.Fprintf(&b, "[[ATTACHMENT|f%d.png]]\n", i)
	}
	b.WriteString(`</system-out></testcase></testsuite>`)
	fsys := fstest.MapFS{"junit/r.xml": {Data: []byte(b.String())}}
	for i := range maxAttachments + 5 {
		fsys[fmt.Sprintf("junit/f%d.png", i)] = &fstest.MapFile{}
	}
	tests, err := ParseFS(fsys)
	if err != nil || len(tests) != 1 || len(tests[0].Attachments) != maxAttachments {
		t.Fatalf("%d tests, %v", len(tests), err)
	}
	long := strings.Repeat("n", 1000)
	a, ok := attachment(long, long, "x.png")
	if !ok || len(a.Name) > maxAttachmentName+len("…") || len(a.ContentType) > maxAttachmentType+len("…") {
		t.Fatalf("bounds: %d %d", len(a.Name), len(a.ContentType))
	}
	if _, ok := attachment("n", "t", "a\x00b"); ok {
		t.Fatal("a NUL in a path")
	}
}
