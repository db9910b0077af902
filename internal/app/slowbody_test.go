//go:build integration

package app_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A request body dripped a byte at a time is cut off after VERDICT_BODY_TIMEOUT, on public and
// authenticated routes alike, while a connection that sent its body in time stays usable.
func TestSlowBodiesAreCutOff(t *testing.T) {
	h := newHarness(t, harnessOpts{env: map[string]string{"VERDICT_BODY_TIMEOUT": "1s"}})
	admin := h.signup("ada@example.com", "Acme")
	addr := strings.TrimPrefix(h.srv.URL, "http://")

	for _, c := range []struct{ name, head string }{
		{"webhook (public)", "POST /api/webhooks/stripe HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nStripe-Signature: t=1,v1=00\r\n"},
		{"signup (public)", "POST /api/auth/signup HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"},
		{"queue a run (authenticated)", "POST /api/executions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer " + admin.token + "\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			start := time.Now()
			if _, err := io.WriteString(conn, c.head+"Content-Length: 1000\r\n\r\n{"); err != nil {
				t.Fatal(err)
			}
			// Drip a byte every 200 ms from another goroutine until the server hangs up.
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				for {
					select {
					case <-stop:
						return
					case <-time.After(200 * time.Millisecond):
						if _, err := conn.Write([]byte(" ")); err != nil {
							return
						}
					}
				}
			}()
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer to a slow body: %v", err)
			}
			held := time.Since(start)
			res.Body.Close()
			if res.StatusCode != http.StatusBadRequest {
				t.Errorf("status %d, want 400", res.StatusCode)
			}
			if held > 4*time.Second {
				t.Errorf("a slow body held the connection %v, want about the 1s body timeout", held)
			}
			t.Logf("slow body answered %d after %v", res.StatusCode, held.Round(10*time.Millisecond))
		})
	}

	t.Run("keep-alive connection outlives the body timeout", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		br := bufio.NewReader(conn)
		_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		body := `{"name":"Renamed Acme"}`
		req := "PATCH /api/organization HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer " +
			admin.token + "\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
		for i := range 2 {
			if _, err := io.WriteString(conn, req); err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("request %d on the kept-alive connection: %v", i, err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != 200 {
				t.Fatalf("request %d: status %d", i, res.StatusCode)
			}
			// Idle past the body timeout: the deadline of the first body must be gone.
			time.Sleep(1500 * time.Millisecond)
		}
	})
}
