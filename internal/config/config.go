// Package config reads every setting from the environment once, at start, and validates it,
// naming the bad setting in the error. Nothing else in Verdict reads the environment.
//
// The settings come in sections, one per concern: Server, Database, Secrets, Mail, Runs (the
// embedded runner and its Engine), Reports, Limits, Billing, AI, Integrations and Retention. Each section
// is decoded by one function of its own, which reads its variables through a decoder, parses
// each once into its typed value (a duration, a map by plan or bucket, network prefixes, a key's
// bytes) and checks it; the section holds only the typed values. The decoder collects one error
// per bad variable, naming it, so a start with several bad settings lists them all.
package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// Config is the whole configuration of `verdict serve`, by section.
type Config struct {
	Server       Server
	Database     Database
	Secrets      Secrets
	Mail         Mail
	Runs         Runs
	Reports      Reports
	Limits       Limits
	Billing      Billing
	AI           AI
	Integrations Integrations
	Retention    Retention
	Schedules    Schedules
}

// Load reads the environment, fills dev-mode secrets, and validates.
func Load() (*Config, error) { return LoadFrom(nil) }

// LoadFrom is Load with an explicit environment (nil = the process environment), for tests.
func LoadFrom(environ map[string]string) (*Config, error) {
	d := newDecoder(environ)
	c := &Config{Server: decodeServer(d), Database: decodeDatabase(d), Secrets: decodeSecrets(d), Mail: decodeMail(d),
		Runs: decodeRuns(d), Limits: decodeLimits(d), Billing: decodeBilling(d), AI: decodeAI(d),
		Integrations: decodeIntegrations(d), Retention: decodeRetention(d), Schedules: decodeSchedules(d)}
	c.Reports = decodeReports(d, c.Server.PublicURL)
	if err := d.err(); err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	// The secrets last: in dev mode a missing one is generated into the data folder, which only
	// a configuration valid otherwise may do.
	if err := c.Secrets.keys(d, c.Server); err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	return c, nil
}

// decoder reads the variables of the environment and parses each into its type, collecting an
// error per bad variable; a variable set to the empty string counts as unset.
type decoder struct {
	lookup func(name string) (string, bool)
	errs   []error
}

func newDecoder(environ map[string]string) *decoder {
	if environ == nil {
		return &decoder{lookup: os.LookupEnv}
	}
	return &decoder{lookup: func(name string) (string, bool) { v, ok := environ[name]; return v, ok }}
}

// bad records what is wrong with the variable name.
func (d *decoder) bad(name, format string, args ...any) {
	d.errs = append(d.errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
}

// err is every error recorded, or nil.
func (d *decoder) err() error { return errors.Join(d.errs...) }

// str is the variable's value, or def when it is unset or empty.
func (d *decoder) str(name, def string) string {
	if v, ok := d.lookup(name); ok && v != "" {
		return v
	}
	return def
}

// integer is the variable as a whole number (32 bits), or def when it is unset or bad.
func (d *decoder) integer(name string, def int) int {
	v := d.str(name, "")
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		d.bad(name, "want a whole number, got %q", v)
		return def
	}
	return int(n)
}

// number is the variable as a finite number, or def when it is unset or bad.
func (d *decoder) number(name string, def float64) float64 {
	v := d.str(name, "")
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		d.bad(name, "want a number, got %q", v)
		return def
	}
	return f
}

// boolean is the variable as true or false (also 1, 0, t, f), or def when it is unset or bad.
func (d *decoder) boolean(name string, def bool) bool {
	v := d.str(name, "")
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		d.bad(name, "want true or false, got %q", v)
		return def
	}
	return b
}

// duration is the variable as a Go duration (30s, 2h), or def when it is unset or bad.
func (d *decoder) duration(name string, def time.Duration) time.Duration {
	v := d.str(name, "")
	if v == "" {
		return def
	}
	t, err := time.ParseDuration(v)
	if err != nil {
		d.bad(name, "want a duration such as 30s or 2h, got %q", v)
		return def
	}
	return t
}

// list is the variable's comma-separated items, trimmed, empty ones left out (def when it is
// unset or empty); nil when there are none.
func (d *decoder) list(name, def string) []string {
	var out []string
	for _, p := range strings.Split(d.str(name, def), ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
