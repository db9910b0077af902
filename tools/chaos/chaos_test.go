package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// suiteLog is what the slow sample image prints: numbered lines, then its tests and its last
// line.
func suiteLog(numbers ...int) string {
	var b strings.Builder
	b.WriteString("verdict example suite (mode slow), folder \"all\"\n")
	for _, n := range numbers {
		fmt.Fprintf(&b, "line %d of 5\n", n)
	}
	return b.String()
}

func TestAnalyseFindsLostAndRepeatedLines(t *testing.T) {
	ended := "  api/health.spec.ts > health endpoint returns 200: ok\n4 tests, 0 failed\n"
	for _, tc := range []struct {
		name     string
		text     string
		complete bool
		want     string
		ended    bool
	}{
		{"whole", suiteLog(1, 2, 3, 4, 5) + ended, true, "ok", true},
		{"a prefix of a run cut short", suiteLog(1, 2, 3), false, "ok", false},
		{"a gap", suiteLog(1, 2, 4, 5), false, "1 lost (3)", false},
		{"the tail of a run that ran to its end", suiteLog(1, 2, 3), true, "2 lost (4-5)", false},
		{"the tail, known from the suite's last line", suiteLog(1, 2) + ended, false, "3 lost (3-5)", true},
		{"a line twice", suiteLog(1, 2, 2, 3), false, `1 repeated (line 2 ×2)`, false},
		{"the suite's last line twice", suiteLog(1, 2, 3, 4, 5) + ended + "4 tests, 0 failed\n", true,
			`1 repeated ("4 tests, 0 failed" ×2)`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := analyse(tc.text, 5, tc.complete)
			if got := s.String(); got != tc.want {
				t.Errorf("analyse = %q, want %q", got, tc.want)
			}
			if s.ended != tc.ended {
				t.Errorf("ended = %v, want %v", s.ended, tc.ended)
			}
			if s.bad() != (tc.want != "ok") {
				t.Errorf("bad = %v for %q", s.bad(), tc.want)
			}
		})
	}
}

// The balancer sends a request to the other replica when one refuses the connection, body
// included, and answers 502 (counted as a connection error) when a replica breaks off a POST.
func TestBalancerFailsOver(t *testing.T) {
	var gotBody string
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/api/boom":
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"success":false,"error":"boom"}`)
		case "/api/cut":
			hj, _ := w.(http.Hijacker)
			c, _, _ := hj.Hijack()
			c.Close()
		default:
			gotBody = string(b)
			w.WriteHeader(http.StatusCreated)
		}
	}))
	defer live.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close() // nothing listens there any more: connections are refused

	b := newBalancer([]string{refused, strings.TrimPrefix(live.URL, "http://")})
	front := httptest.NewServer(b)
	defer front.Close()
	w := b.setWindow()

	for i := range 4 { // round robin: half of them try the refused replica first
		res, err := http.Post(front.URL+"/api/executions", "application/json", strings.NewReader(fmt.Sprintf(`{"n":%d}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusCreated || gotBody != fmt.Sprintf(`{"n":%d}`, i) {
			t.Fatalf("POST %d: %d, body %q reached the replica", i, res.StatusCode, gotBody)
		}
	}
	if w.failovers == 0 {
		t.Error("no request went to the other replica")
	}
	if n := w.count("2xx", "api"); n != 4 {
		t.Errorf("2xx = %d, want 4", n)
	}

	res, err := http.Get(front.URL + "/api/boom")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusInternalServerError || !strings.Contains(string(body), "boom") {
		t.Errorf("GET /api/boom: %d %s", res.StatusCode, body)
	}
	if w.count("500") != 1 || len(w.samples) != 1 {
		t.Errorf("500s counted %d, samples %q", w.count("500"), w.samples)
	}

	res, err = http.Post(front.URL+"/api/cut", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadGateway || w.count("conn error") != 1 {
		t.Errorf("a POST the replica broke off: %d, conn errors %d", res.StatusCode, w.count("conn error"))
	}
}
