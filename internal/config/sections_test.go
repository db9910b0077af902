package config

import (
	"strings"
	"testing"
)

// A value that is no number, boolean or duration is refused with its variable's name (not a
// field of the code's), as is a CPU count that is no finite number; the errors of several bad
// variables come together.
func TestMalformedValuesNameTheirVariable(t *testing.T) {
	for name, value := range map[string]string{"SMTP_PORT": "x", "VERDICT_DEV": "maybe", "JWT_EXPIRY": "soon",
		"VERDICT_RUNNER_SLOTS": "99999999999", "VERDICT_RUN_CPUS": "NaN", "VERDICT_S3_PATH_STYLE": "yes please",
		"VERDICT_K8S_START_TIMEOUT": "2 minutes"} {
		env := base()
		env[name] = value
		if _, err := LoadFrom(env); err == nil || !strings.HasPrefix(err.Error(), "configuration: "+name+": want ") {
			t.Errorf("%s=%q: %v", name, value, err)
		}
	}
	env := base()
	env["VERDICT_RUN_CPUS"] = "+Inf"
	if _, err := LoadRunner(map[string]string{"VERDICT_RUNNER_SECRET": strings.Repeat("k", 32), "VERDICT_RUN_CPUS": "+Inf"}); err == nil ||
		!strings.Contains(err.Error(), "VERDICT_RUN_CPUS: want a number") {
		t.Errorf("runner with infinite CPUs: %v", err)
	}
	env["SMTP_PORT"], env["VERDICT_LOG_FORMAT"] = "x", "logfmt"
	_, err := LoadFrom(env)
	for _, name := range []string{"VERDICT_RUN_CPUS", "SMTP_PORT", "VERDICT_LOG_FORMAT"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("three bad variables: %v does not name %s", err, name)
		}
	}
}
