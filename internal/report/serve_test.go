package report

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// reportServer serves a store the way the API mounts it: /reports/{org}/{task}/{path...}.
func reportServer(t *testing.T, s Store) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	handler := func(w http.ResponseWriter, r *http.Request) {
		Serve(w, r, s, r.PathValue("org"), r.PathValue("task"), r.PathValue("path"))
	}
	mux.HandleFunc("/reports/{org}/{task}", handler)
	mux.HandleFunc("/reports/{org}/{task}/{path...}", handler)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func get(t *testing.T, rawURL string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func checkReportHeaders(t *testing.T, what string, h http.Header) {
	t.Helper()
	for k, v := range map[string]string{
		"Content-Security-Policy":      ContentSecurityPolicy,
		"X-Content-Type-Options":       "nosniff",
		"Referrer-Policy":              "no-referrer",
		"Cross-Origin-Resource-Policy": "cross-origin",
		"Cache-Control":                "private, no-store",
	} {
		if got := h.Get(k); got != v {
			t.Errorf("%s: %s = %q, want %q", what, k, got, v)
		}
	}
	if !strings.HasPrefix(ContentSecurityPolicy, "sandbox ") || strings.Contains(ContentSecurityPolicy, "allow-same-origin") {
		t.Error("the policy must sandbox without allow-same-origin")
	}
}

func servedStore(t *testing.T, s Store) *httptest.Server {
	files := []entry{
		{name: "pr/index.html", body: "<!DOCTYPE html><title>Playwright Test Report</title>"},
		{name: "pr/data/7f3a.png", body: "\x89PNG\r\n\x1a\n"},
		{name: "pr/data/trace.zip", body: "PK\x03\x04"},
		{name: "pr/data/video.webm", body: "\x1aE\xdf\xa3webm-bytes"},
		{name: "pr/trace/index.html", body: "<html>trace</html>"},
		{name: "pr/empty-folder/x/readme.txt", body: "no index here"},
	}
	for _, ext := range []string{".js", ".css", ".json", ".svg", ".txt", ".xml", ".trace", ".bin"} {
		files = append(files, entry{name: "pr/types/f" + ext, body: "content"})
	}
	if _, err := s.Put(context.Background(), org, task, bytes.NewReader(tarOf(t, files...)), "playwright-report", 1<<20); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(context.Background(), "otherorg", task, bytes.NewReader(tarOf(t, entry{name: "r/secret.txt", body: "THEIR SECRET"})), "playwright-report", 1<<20); err != nil {
		t.Fatal(err)
	}
	return reportServer(t, s)
}

func TestServe(t *testing.T) {
	forEachStore(t, func(t *testing.T, s testStore) {
		srv := servedStore(t, s)
		base := srv.URL + "/reports/" + org + "/" + task

		resp, _ := get(t, base+"/playwright-report?token=abc")
		if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/reports/"+org+"/"+task+"/playwright-report/?token=abc" {
			t.Errorf("folder without slash: %d %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		checkReportHeaders(t, "redirect", resp.Header)

		resp, _ = get(t, base)
		if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/reports/"+org+"/"+task+"/" {
			t.Errorf("run folder without slash: %d %q", resp.StatusCode, resp.Header.Get("Location"))
		}

		resp, body := get(t, base+"/playwright-report/")
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" || !strings.Contains(body, "Playwright Test Report") {
			t.Errorf("folder: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		checkReportHeaders(t, "index.html", resp.Header)

		for path, ctype := range map[string]string{
			"data/7f3a.png": "image/png", "data/trace.zip": "application/zip", "data/video.webm": "video/webm",
			"types/f.js": "text/javascript; charset=utf-8", "types/f.css": "text/css; charset=utf-8",
			"types/f.json": "application/json", "types/f.svg": "image/svg+xml", "types/f.txt": "text/plain; charset=utf-8",
			"types/f.xml": "application/xml", "types/f.trace": "application/octet-stream", "types/f.bin": "application/octet-stream",
			"trace/index.html": "text/html; charset=utf-8",
		} {
			resp, _ := get(t, base+"/playwright-report/"+path)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != ctype {
				t.Errorf("%s: %d %q, want %q", path, resp.StatusCode, resp.Header.Get("Content-Type"), ctype)
			}
		}

		resp, body = get(t, base+"/playwright-report/data/video.webm", "Range", "bytes=4-7")
		if resp.StatusCode != http.StatusPartialContent || body != "webm" {
			t.Errorf("range: %d %q", resp.StatusCode, body)
		}
		resp, _ = get(t, base+"/playwright-report/data/video.webm", "Range", "bytes=999-")
		if resp.StatusCode != http.StatusRequestedRangeNotSatisfiable {
			t.Errorf("bad range: %d", resp.StatusCode)
		}
		checkReportHeaders(t, "416", resp.Header)

		for _, path := range []string{"/missing.html", "/playwright-report/empty-folder/", "/playwright-report/data/7f3a.png/"} {
			resp, _ := get(t, base+path)
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("%s: %d", path, resp.StatusCode)
			}
			checkReportHeaders(t, "404", resp.Header)
		}

		req, _ := http.NewRequest(http.MethodPost, base+"/playwright-report/", nil)
		if resp, err := noRedirects.Do(req); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("POST: %v %v", resp, err)
		}
	})
}

// Every way of writing a path out of the run must end in a 404 from Serve, or in the router's
// own redirect to a cleaned URL, and never in another run's file.
func TestServeTraversal(t *testing.T) {
	forEachStore(t, func(t *testing.T, s testStore) {
		srv := servedStore(t, s)
		base := srv.URL + "/reports/" + org + "/" + task
		for _, raw := range []string{
			"/../otherorg/" + task + "/playwright-report/secret.txt",
			"/%2e%2e/%2e%2e/otherorg/" + task + "/playwright-report/secret.txt",
			"/playwright-report/..%2f..%2f..%2fotherorg%2f" + task + "%2fplaywright-report%2fsecret.txt",
			"/playwright-report/%252e%252e/%252e%252e/otherorg/" + task + "/playwright-report/secret.txt",
			"/playwright-report/..%5c..%5c..%5cotherorg%5c" + task + "%5cplaywright-report%5csecret.txt",
			"/playwright-report/index.html%00.png",
			"/.put-0/x",
			"/%2fetc%2fpasswd",
		} {
			resp, body := get(t, base+raw)
			if resp.StatusCode == http.StatusOK || strings.Contains(body, "THEIR SECRET") {
				t.Errorf("%s: %d %q", raw, resp.StatusCode, body)
			}
		}
		for _, rel := range []string{
			"../otherorg/" + task + "/playwright-report/secret.txt", "playwright-report/../../otherorg/" + task + "/playwright-report/secret.txt",
			`..\otherorg\` + task + `\playwright-report\secret.txt`, "playwright-report/index.html\x00", "/etc/passwd", "./playwright-report/index.html",
			"%2e%2e/otherorg/" + task + "/playwright-report/secret.txt",
		} {
			w := httptest.NewRecorder()
			Serve(w, httptest.NewRequest(http.MethodGet, "/reports/x/y/z", nil), s, org, task, rel)
			if w.Code != http.StatusNotFound {
				t.Errorf("Serve(%q) = %d", rel, w.Code)
			}
			checkReportHeaders(t, "traversal", w.Header())
		}
	})
}

func TestServeHTMLGetsStorageShim(t *testing.T) {
	forEachStore(t, func(t *testing.T, s testStore) {
		pages := map[string]string{
			"r/doctype.html":  "<!DOCTYPE html>\n<html><head><title>Playwright Test Report</title>",
			"r/bom.htm":       "\xef\xbb\xbf  <!doctype HTML><p>allure",
			"r/bare.html":     "<p>no doctype",
			"r/unclosed.html": "<!DOCTYPE",
		}
		var entries []entry
		for name, body := range pages {
			entries = append(entries, entry{name: name, body: body})
		}
		if _, err := s.Put(context.Background(), org, task, bytes.NewReader(tarOf(t, entries...)), "r", 1<<20); err != nil {
			t.Fatal(err)
		}
		srv := reportServer(t, s)
		for file, want := range map[string]string{
			"doctype.html":  "<!DOCTYPE html>" + storageShim + "\n<html><head><title>Playwright Test Report</title>",
			"bom.htm":       "\xef\xbb\xbf  <!doctype HTML>" + storageShim + "<p>allure",
			"bare.html":     storageShim + "<p>no doctype",
			"unclosed.html": storageShim + "<!DOCTYPE",
		} {
			resp, body := get(t, srv.URL+"/reports/"+org+"/"+task+"/r/"+file)
			if resp.StatusCode != http.StatusOK || body != want || resp.ContentLength != int64(len(want)) {
				t.Errorf("%s: %d, length %d, body %q", file, resp.StatusCode, resp.ContentLength, body)
			}
			checkReportHeaders(t, file, resp.Header)
		}
		req, _ := http.NewRequest(http.MethodHead, srv.URL+"/reports/"+org+"/"+task+"/r/bare.html", nil)
		resp, err := noRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.ContentLength != int64(len(storageShim)+len("<p>no doctype")) {
			t.Errorf("HEAD: %d, length %d", resp.StatusCode, resp.ContentLength)
		}
	})
}
