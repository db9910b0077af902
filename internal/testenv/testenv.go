// Package testenv finds the real services the tests run against. scripts/test.sh installs and
// starts them and exports their addresses; a test whose service is missing fails loudly with a
// pointer to that script, never skips. The one exception is the short tier (go test -short),
// which runs without any service: there every helper that finds one skips its test first
// (SkipShort), before looking for the service, so nothing reaches one.
package testenv

import (
	"context"
	"database/sql"
	"flag"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"verdict/internal/domain"
)

// Defaults match scripts/services.sh.
const (
	DefaultPostgres   = "postgres://postgres@127.0.0.1:55432/postgres?sslmode=disable"
	DefaultRedis      = "redis://127.0.0.1:56379/0"
	DefaultStripeMock = "http://127.0.0.1:12111"
)

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// SkipShort skips the test in the short tier (go test -short), which runs without services:
// the full tier (go test without -short) runs it, and fails it when the service is missing.
func SkipShort(t testing.TB, service string) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs " + service + ": the full tier (go test without -short) runs it")
	}
}

// Reachable fails the test when nothing listens at rawURL's host: what names the service.
func Reachable(t testing.TB, what, rawURL string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("%s URL %q: %v", what, rawURL, err)
	}
	c, err := net.DialTimeout("tcp", u.Host, 2*time.Second)
	if err != nil {
		t.Fatalf("%s is not reachable at %s (%v): run the tests with scripts/test.sh, which installs and starts it", what, u.Host, err)
	}
	c.Close()
}

// PostgresServer returns the URL of the test PostgreSQL server's maintenance database.
func PostgresServer(t testing.TB) string {
	t.Helper()
	SkipShort(t, "PostgreSQL")
	u := env("VERDICT_TEST_POSTGRES", DefaultPostgres)
	Reachable(t, "PostgreSQL", u)
	return u
}

// PostgresDB creates a fresh, empty database for this test and returns its URL; it is dropped
// when the test ends.
func PostgresDB(t testing.TB) string {
	t.Helper()
	server := PostgresServer(t)
	admin, err := sql.Open("pgx", server)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	name := "verdict_test_" + strings.ToLower(Suffix())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		a, err := sql.Open("pgx", server)
		if err != nil {
			return
		}
		defer a.Close()
		_, _ = a.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
	})
	u, _ := url.Parse(server)
	u.Path = "/" + name
	return u.String()
}

// RedisURL returns the test Redis server's URL. Tests must use keys under a prefix of their own
// (see KeyPrefix) because the server is shared.
func RedisURL(t testing.TB) string {
	t.Helper()
	SkipShort(t, "Redis")
	u := env("VERDICT_TEST_REDIS", DefaultRedis)
	Reachable(t, "Redis", u)
	return u
}

// StripeMock returns the address of stripe-mock, the payment provider's own mock API server.
func StripeMock(t testing.TB) string {
	t.Helper()
	SkipShort(t, "stripe-mock")
	u := env("VERDICT_TEST_STRIPE", DefaultStripeMock)
	Reachable(t, "stripe-mock", u)
	return u
}

// KeyPrefix returns a unique key prefix for one test's Redis keys.
func KeyPrefix(t testing.TB) string { return "test:" + Suffix() + ":" }

// DockerHost returns the Docker engine address (DOCKER_HOST or the local socket) after
// checking that the socket exists.
func DockerHost(t testing.TB) string {
	t.Helper()
	SkipShort(t, "the Docker engine")
	h := env("DOCKER_HOST", "unix:///var/run/docker.sock")
	if p, ok := strings.CutPrefix(h, "unix://"); ok {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("Docker engine socket %s is missing (%v): run the tests with scripts/test.sh, which installs and starts dockerd", p, err)
		}
	}
	return h
}

// Suffix is a short random name part, so that tests sharing a service do not meet.
func Suffix() string { return domain.RandomHex(6) }

// RunWaiting runs a package's tests with up to n parallel tests at once, where go test's
// default is one per CPU: for packages whose parallel tests mostly wait out real timers (leases,
// retries, grace periods), which would otherwise queue for a CPU they barely use. A
// -test.parallel given on the command line wins. Call it from TestMain.
func RunWaiting(m *testing.M, n int) int {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
			panic(err)
		}
	}
	return m.Run()
}
