package testenv

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// OIDCUser is an account of the test OpenID provider: its login name and password, and the
// address and name its tokens give.
type OIDCUser struct {
	Username, Password string
	Email              string
	EmailVerified      bool
	FirstName          string
	LastName           string
}

// OIDCProvider is a running OpenID provider process (zitadel/oidc's example provider, which
// scripts/services.sh builds): its issuer, and the client it knows ("web" with secret
// "secret", allowed to return to the redirect URIs given).
type OIDCProvider struct {
	Issuer       string
	ClientID     string
	ClientSecret string
}

// StartOIDCProvider starts an OpenID provider for the test on a free port of localhost, with
// users and the redirect URIs its client may return to; it is stopped when the test ends.
func StartOIDCProvider(t testing.TB, users []OIDCUser, redirectURIs ...string) *OIDCProvider {
	t.Helper()
	SkipShort(t, "an OpenID provider")
	bin := os.Getenv("VERDICT_TEST_OIDC_OP")
	if bin == "" {
		t.Fatal("VERDICT_TEST_OIDC_OP is not set: run the tests with the variables scripts/services.sh prints, which builds the OpenID provider")
	}
	type opUser struct {
		ID                string
		Username          string
		Password          string
		FirstName         string
		LastName          string
		Email             string
		EmailVerified     bool
		PreferredLanguage string
	}
	m := map[string]opUser{}
	for i, u := range users {
		id := fmt.Sprintf("user%d", i+1)
		m[id] = opUser{ID: id, Username: u.Username, Password: u.Password, FirstName: u.FirstName, LastName: u.LastName,
			Email: u.Email, EmailVerified: u.EmailVerified, PreferredLanguage: "en"}
	}
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	usersFile := filepath.Join(t.TempDir(), "users.json")
	if err := os.WriteFile(usersFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PORT="+port, "USERS_FILE="+usersFile, "REDIRECT_URI="+strings.Join(redirectURIs, ","))
	logFile := filepath.Join(t.TempDir(), "op.log")
	out, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the OpenID provider %s: %v", bin, err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); out.Close() })
	p := &OIDCProvider{Issuer: "http://localhost:" + port + "/", ClientID: "web", ClientSecret: "secret"}
	deadline := time.Now().Add(15 * time.Second)
	for {
		res, err := http.Get(p.Issuer + ".well-known/openid-configuration")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logFile)
			t.Fatalf("the OpenID provider did not answer at %s: %v\n%s", p.Issuer, err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
