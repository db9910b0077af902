package control

import (
	"encoding/json"
	"strings"

	"verdict/internal/crypto/secretbox"
	"verdict/internal/run"
)

// SealEnv encrypts env for the execution record.
func SealEnv(box *secretbox.Box, env run.RunEnv) (string, error) {
	b, err := json.Marshal(env)
	if err != nil {
		return "", err
	}
	return box.Seal(b)
}

// OpenEnv decrypts an execution's environment; an empty cipher is an empty environment.
func OpenEnv(box *secretbox.Box, cipher string) (run.RunEnv, error) {
	var env run.RunEnv
	if cipher == "" {
		return env, nil
	}
	b, err := box.Open(cipher)
	if err != nil {
		return env, err
	}
	err = json.Unmarshal(b, &env)
	return env, err
}

// reportMask returns what makes text from a run's reports storable: cleaned, and with the
// run's secret values masked as in its log.
func reportMask(box *secretbox.Box, cipher string) (func(string) string, error) {
	env, err := OpenEnv(box, cipher)
	if err != nil {
		return nil, err
	}
	m := run.Masker(env)
	return func(s string) string {
		s = clean(s)
		if m != nil {
			s = m.Replace(s)
		}
		return s
	}, nil
}

// clean makes text from a container's reports storable everywhere: valid UTF-8 without NUL
// bytes (PostgreSQL text refuses both).
func clean(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}
