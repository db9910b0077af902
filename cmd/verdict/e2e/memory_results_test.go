//go:build integration

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// bigJUnitCommand has the pytest image write an ~8.5 MB JUnit report to /app/junit (one of the
// report folders collected by default): 1950 failed tests with 4000-character messages of '<',
// and 5000 passed ones with '<' in their names. An HTML-escaping encoder writes each '<' in
// six bytes: stored that way, the results were ~48 MB.
const bigJUnitCommand = `python3 -c 'import os; os.makedirs("/app/junit", exist_ok=True); f = open("/app/junit/results.xml", "w"); w = f.write; m = "<" * 4000; ` +
	`w("<?xml version=\"1.0\"?><testsuites><testsuite name=\"s &lt;big&gt;\">\n"); ` +
	`[w("<testcase classname=\"s &lt;big&gt;\" name=\"fails &lt;%d&gt;\" time=\"0.5\"><failure><![CDATA[%s]]></failure></testcase>\n" % (i, m)) for i in range(1950)]; ` +
	`[w("<testcase classname=\"s &lt;big&gt;\" name=\"passes &lt;%d&gt; &amp; more\" time=\"0.01\"/>\n" % i) for i in range(5000)]; ` +
	`w("</testsuite></testsuites>\n"); f.close()'`

// cpuTime is the process's user and system CPU time so far, from /proc/<pid>/stat.
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	// After the command name (in parentheses, which may hold spaces): state is field 3,
	// utime and stime fields 14 and 15, in clock ticks (100 a second on Linux).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("/proc/%d/stat: %q", pid, b)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// TestMemoryReportRouteBogusTokens: a run leaves an 8.5 MB JUnit report full of '<'; then 24
// anonymous clients ask for its report with bogus tokens, at once, while its member reads the
// run 4 times. A refused request must cost no read of the run's results, and the run's
// results are bounded: before, the 24 requests cost the server 14 s of CPU and 550 MiB.
func TestMemoryReportRouteBogusTokens(t *testing.T) {
	v := startVerdict(t)
	tok := v.signup("bogus@example.com")
	task := v.queue(tok, bigJUnitCommand)
	if st := v.waitFinal(tok, task, 90*time.Second); st != "FAILED" {
		t.Fatalf("the run ended %s, want FAILED (its report holds failed tests)", st)
	}
	e := v.call("GET", "/api/executions/"+task, tok, nil, 200)["execution"].(map[string]any)
	org := e["organizationId"].(string)
	if total := e["summary"].(map[string]any)["total"]; total != 6950.0 {
		t.Fatalf("summary counts %v tests, want 6950", total)
	}
	user := v.call("GET", "/api/auth/me", tok, nil, 200)["data"].(map[string]any)["id"].(string)
	path := "/reports/" + org + "/" + task + "/junit/results.xml"
	// Malformed, and well formed (a signature over another run), tokens: both refused.
	forged := "zzzzzzzz." + user + "." + strings.Repeat("A", 43)

	get := func(url, token string) (int, int64, error) {
		req, _ := http.NewRequest("GET", v.base+url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, 0, err
		}
		defer res.Body.Close()
		n, err := io.Copy(io.Discard, res.Body)
		return res.StatusCode, n, err
	}
	time.Sleep(500 * time.Millisecond) // let the run's own work settle
	base, cpu0 := v.rss(), cpuTime(t, v.pid)
	s := v.sampleRSS()
	start := time.Now()
	const bogus, views = 24, 4
	var wg sync.WaitGroup
	errs := make([]error, bogus+views)
	var viewBytes int64
	for i := range bogus + views {
		wg.Add(1)
		go func() {
			defer wg.Done()
			url, want, token := path+"?token=bogus", 404, ""
			switch {
			case i >= bogus:
				url, want, token = "/api/executions/"+task, 200, tok
			case i%3 == 1:
				url = path + "?token=" + forged
			case i%3 == 2:
				url = "/reports/" + org + "/" + task + "/~" + forged + "/junit/results.xml"
			}
			status, n, err := get(url, token)
			if err == nil && status != want {
				err = fmt.Errorf("GET %s: %d, want %d", url, status, want)
			}
			if i == bogus {
				viewBytes = n
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	peak := s.stop()
	cpu := cpuTime(t, v.pid) - cpu0
	time.Sleep(time.Second)
	after := v.rss()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d anonymous report requests with bogus tokens and %d run views (%.2f MB each) at once: server RSS %.1f MB before, "+
		"peak %.1f MB (+%.1f MB), %.1f MB after; CPU %s; %s", bogus, views, float64(viewBytes)/1e6, mb(base), mb(peak), mb(peak-base),
		mb(after), cpu, elapsed.Round(time.Millisecond))
	// A refused request reads no results; a run view decodes ~1 MiB of them (a few MB of
	// memory and tens of ms each). 4 views and 24 refusals fit in 60 MB and 2 s of CPU with
	// room to spare; reading 48 MB of results per request took 550 MiB and 14 s.
	if peak-base > 60e6 {
		t.Errorf("server RSS grew by %.1f MB, want under 60 MB", mb(peak-base))
	}
	if cpu > 2*time.Second {
		t.Errorf("the requests cost the server %s of CPU, want under 2 s", cpu)
	}
	if viewBytes > 3<<19 {
		t.Errorf("the run view is %d bytes, want at most 1.5 MiB", viewBytes)
	}
}
