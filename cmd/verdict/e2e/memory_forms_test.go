//go:build integration

package e2e

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMemoryStalledFormBodies signs in five times at once, as anyone can: the pre-session CSRF
// token of GET /login in the X-CSRF-Token header and a 30 MiB multipart body, all of it sent
// but its last kilobyte, then held. A server that reads such a form (net/http keeps up to 32 MiB
// of a multipart form in memory) holds the five bodies for as long as the clients stall: it
// grew by about 250 MB. The dashboard refuses a body larger than its forms' 64 KiB before
// reading any of it, so the five cost the server next to nothing.
//
// The bound on the peak's growth, 20 MB, is below the size of one of the bodies (31.5 MB): a
// server holding even one of them fails, while the requests themselves (five connections, an
// error page each) cost kilobytes, which leaves room for the runtime's own noise (GC pacing,
// goroutine stacks).
func TestMemoryStalledFormBodies(t *testing.T) {
	v := startVerdict(t)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	res, err := c.Get(v.base + "/login")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(page)
	u, _ := url.Parse(v.base)
	var cookie string
	for _, ck := range jar.Cookies(u) {
		if ck.Name == "verdict_presession" {
			cookie = ck.Name + "=" + ck.Value
		}
	}
	if res.StatusCode != 200 || m == nil || cookie == "" {
		t.Fatalf("GET /login: %d, token %q, cookie %q", res.StatusCode, m, cookie)
	}

	const (
		clients  = 5
		size     = 30 << 20
		boundary = "XyZ"
		hold     = 3 * time.Second
	)
	part := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.csv\"\r\nContent-Type: text/csv\r\n\r\n"
	head := "POST /login HTTP/1.1\r\nHost: " + u.Host + "\r\nContent-Type: multipart/form-data; boundary=" + boundary +
		"\r\nX-CSRF-Token: " + string(m[1]) + "\r\nCookie: " + cookie + "\r\nContent-Length: " + strconv.Itoa(size) + "\r\n\r\n" + part
	chunk := []byte(strings.Repeat("a", 64<<10))

	time.Sleep(500 * time.Millisecond) // let the server settle after its start
	base := v.rss()
	s := v.sampleRSS()
	start := time.Now()
	var wg sync.WaitGroup
	statuses := make([]string, clients)
	sent := make([]int, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", u.Host)
			if err != nil {
				statuses[i] = err.Error()
				return
			}
			defer conn.Close()
			answered := make(chan string, 1)
			go func() {
				_ = conn.SetReadDeadline(start.Add(hold + 10*time.Second))
				res, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil {
					answered <- "no answer"
					return
				}
				res.Body.Close()
				answered <- res.Status
			}()
			// All of the body but its last kilobyte (and the closing boundary), then held: a
			// write fails once the server hangs up.
			n, err := io.WriteString(conn, head)
			for sent[i] = n; err == nil && sent[i] < len(head)+size-len(part)-(1<<10); sent[i] += n {
				n, err = conn.Write(chunk[:min(len(chunk), len(head)+size-len(part)-(1<<10)-sent[i])])
			}
			select {
			case statuses[i] = <-answered:
			case <-time.After(time.Until(start.Add(hold))):
				statuses[i] = "no answer while held"
			}
			time.Sleep(time.Until(start.Add(hold)))
		}()
	}
	wg.Wait()
	peak := s.stop()
	time.Sleep(time.Second)
	after := v.rss()
	t.Logf("%d sign-ins with a %d MiB multipart body held for %v (sent %v bytes each, answers %q): server RSS %.1f MB before, peak %.1f MB (+%.1f MB), %.1f MB a second after, %d samples",
		clients, size>>20, hold, sent, statuses, mb(base), mb(peak), mb(peak-base), mb(after), s.samples())
	if peak-base > 20e6 {
		t.Errorf("server RSS grew by %.1f MB while %d clients held a %d MiB sign-in body, want under 20 MB", mb(peak-base), clients, size>>20)
	}
	for i, st := range statuses {
		if !strings.HasPrefix(st, "413") {
			t.Errorf("client %d: %s, want 413 before the body is read", i, st)
		}
	}
	if res, err := http.Get(v.base + "/login"); err != nil || res.StatusCode != 200 {
		t.Fatalf("the server does not serve GET /login afterwards: %v %v", res, err)
	} else {
		res.Body.Close()
	}
}
