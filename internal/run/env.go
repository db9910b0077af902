package run

import (
	"encoding/json"
	"sort"
	"strings"

	"verdict/internal/crypto/secretbox"
)

// RunEnv is the environment a run's container gets beyond the contract variables, kept
// encrypted on the execution (secrets must never sit in plain text on a run record).
type RunEnv struct {
	Vars    map[string]string `json:"vars"`
	Secrets []string          `json:"secrets"` // names whose values are masked in logs
}

// SealEnv encrypts env for the execution record.
func SealEnv(box *secretbox.Box, env RunEnv) (string, error) {
	b, err := json.Marshal(env)
	if err != nil {
		return "", err
	}
	return box.Seal(b)
}

// OpenEnv decrypts an execution's environment; an empty cipher is an empty environment.
func OpenEnv(box *secretbox.Box, cipher string) (RunEnv, error) {
	var env RunEnv
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

// Mask is the placeholder that replaces a secret value in logs.
const Mask = "********"

// masker replaces secret values in log lines. Longer values are replaced first so a secret
// that contains another is masked whole.
func masker(env RunEnv) *strings.Replacer {
	var vals []string
	for _, name := range env.Secrets {
		if v := env.Vars[name]; v != "" {
			vals = append(vals, v)
		}
	}
	if len(vals) == 0 {
		return nil
	}
	sort.Slice(vals, func(i, j int) bool { return len(vals[i]) > len(vals[j]) })
	pairs := make([]string, 0, 2*len(vals))
	for _, v := range vals {
		pairs = append(pairs, v, Mask)
	}
	return strings.NewReplacer(pairs...)
}
