package run

import (
	"sort"
	"strings"
)

// RunEnv is the environment a run's container gets beyond the contract variables. It is kept
// sealed on the execution (secrets must never sit in plain text on a run record) and unsealed
// by the control plane for the runner that claimed the run (control.SealEnv, control.OpenEnv).
type RunEnv struct {
	Vars    map[string]string `json:"vars"`
	Secrets []string          `json:"secrets"` // names whose values are masked in logs
}

// Mask is the placeholder that replaces a secret value in logs.
const Mask = "********"

// Masker replaces secret values in log lines. Longer values are replaced first so a secret
// that contains another is masked whole.
func Masker(env RunEnv) *strings.Replacer {
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
