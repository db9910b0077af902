package egress

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestInternal(t *testing.T) {
	for _, c := range []struct {
		addr     string
		internal bool
	}{
		{"127.0.0.1", true}, {"127.8.9.10", true}, {"::1", true}, {"10.1.2.3", true}, {"172.16.0.1", true},
		{"192.168.1.1", true}, {"169.254.169.254", true}, {"fe80::1", true}, {"fd00:ec2::254", true},
		{"0.0.0.0", true}, {"::", true}, {"100.64.0.1", true}, {"224.0.0.1", true}, {"255.255.255.255", true},
		{"::ffff:127.0.0.1", true}, {"::ffff:169.254.169.254", true}, {"64:ff9b::a9fe:a9fe", true},
		{"2002:7f00:1::", true}, {"198.18.0.1", true},
		{"8.8.8.8", false}, {"140.82.112.3", false}, {"2606:4700::1111", false}, {"172.32.0.1", false},
	} {
		if got := Internal(netip.MustParseAddr(c.addr)); got != c.internal {
			t.Errorf("Internal(%s) = %v, want %v", c.addr, got, c.internal)
		}
	}
}

func TestCheckURL(t *testing.T) {
	g, err := New([]string{"10.9.0.0/16", "hooks.corp", "::1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		url     string
		ok      bool
		refused bool
	}{
		{"https://hooks.slack.com/services/T/B/x", true, false},
		{"http://example.com:8080/x", true, false},
		{"https://10.9.3.4/x", true, false},   // allowed network
		{"https://hooks.corp/x", true, false}, // allowed name
		{"http://[::1]:9/x", true, false},     // allowed address
		{"http://127.0.0.1:8080/", false, true},
		{"http://169.254.169.254/latest/meta-data", false, true},
		{"http://[::ffff:169.254.169.254]/", false, true},
		{"http://10.1.0.1/", false, true},
		{"http://localhost:3000/", false, true},
		{"http://api.localhost/", false, true},
		{"ftp://example.com/", false, false},
		{"https://user:pw@example.com/", false, false},
		{"/relative", false, false},
		{"https://", false, false},
		{"https://exa mple.com/", false, false},
	} {
		err := g.CheckURL(c.url)
		if (err == nil) != c.ok {
			t.Errorf("CheckURL(%q) = %v, want ok %v", c.url, err, c.ok)
		}
		if errors.Is(err, ErrRefused) != c.refused {
			t.Errorf("CheckURL(%q) = %v, want refused %v", c.url, err, c.refused)
		}
	}
}

func TestAllows(t *testing.T) {
	g, _ := New([]string{"10.9.0.0/16", "Hooks.Corp", "127.0.0.1"})
	for host, want := range map[string]bool{"10.9.3.4": true, "hooks.corp": true, "hooks.corp.": true, "127.0.0.1": true,
		"[::ffff:127.0.0.1]": true, "10.8.0.1": false, "example.com": false, "127.0.0.2": false} {
		if got := g.Allows(host); got != want {
			t.Errorf("Allows(%q) = %v, want %v", host, got, want)
		}
	}
	var zero *Guard
	if zero.Allows("127.0.0.1") {
		t.Error("a nil guard allows loopback")
	}
}

func TestNewRefusesBadEntries(t *testing.T) {
	for _, e := range []string{"10.0.0.0/99", "not a host", "a..b"} {
		if _, err := New([]string{e}); err == nil || !strings.Contains(err.Error(), e) {
			t.Errorf("New(%q) = %v, want an error naming it", e, err)
		}
	}
}

// A name that resolves to loopback ("localhost") passes no check on its text in the Client: it is
// the dialled address that is refused, as a name rebound to an internal address would be.
func TestClientChecksTheDialledAddress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	var zero *Guard
	for _, u := range []string{srv.URL, "http://localhost:" + port + "/"} {
		_, err := zero.Client(5 * time.Second).Get(u)
		if !errors.Is(err, ErrRefused) {
			t.Errorf("GET %s = %v, want refused", u, err)
		}
	}
	allowed, err := New([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := allowed.Client(5 * time.Second).Get(srv.URL)
	if err != nil {
		t.Fatalf("GET %s with 127.0.0.1 allowed: %v", srv.URL, err)
	}
	resp.Body.Close()
	byName, _ := New([]string{"localhost"})
	resp, err = byName.Client(5 * time.Second).Get("http://localhost:" + port + "/")
	if err != nil {
		t.Fatalf("GET localhost with localhost allowed: %v", err)
	}
	resp.Body.Close()
}

func TestClientFollowsNoRedirect(t *testing.T) {
	var hits int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data", http.StatusFound)
	}))
	defer srv.Close()
	g, _ := New([]string{"127.0.0.1"})
	resp, err := g.Client(5 * time.Second).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || hits != 1 {
		t.Fatalf("status %d after %d hits, want the 302 itself after 1", resp.StatusCode, hits)
	}
}

func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"https://example.com/x", "http://127.0.0.1/", "http://[::ffff:10.0.0.1]/", "http://0x7f.1/"} {
		f.Add(s)
	}
	g, _ := New(nil)
	f.Fuzz(func(t *testing.T, raw string) {
		err := g.CheckURL(raw)
		if err != nil {
			return
		}
		// What passes is an http(s) URL whose host is a name or a public address.
		if l := strings.ToLower(raw); !strings.HasPrefix(l, "http://") && !strings.HasPrefix(l, "https://") {
			t.Fatalf("CheckURL(%q) passed a non-http URL", raw)
		}
	})
}
