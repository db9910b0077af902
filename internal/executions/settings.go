package executions

import (
	"fmt"

	"verdict/internal/domain"
)

// CheckRunSettings checks a run's folder, base URL and variables as Queue checks a request's,
// for callers that keep them to queue runs later (a schedule), so that a mistake is refused
// when it is saved rather than at each run.
func CheckRunSettings(folder, baseURL string, vars []domain.EnvVar) error {
	for name, v := range map[string]string{"baseUrl": baseURL, "folder": folder} {
		if len(v) > maxFieldLen {
			return domain.BadRequest("Validation error", name+" is too long")
		}
	}
	if err := validateFolder(folder); err != nil {
		return err
	}
	if baseURL != "" && !validURL(baseURL) {
		return domain.BadRequest("Validation error", "baseUrl must be an http(s) URL")
	}
	if len(vars) > maxEnvVars {
		return domain.BadRequest("Validation error", fmt.Sprintf("at most %d envVars", maxEnvVars))
	}
	seen := map[string]bool{}
	for _, v := range vars {
		if err := validateEnv(v.Key, v.Value); err != nil {
			return err
		}
		if seen[v.Key] {
			return domain.BadRequest("Validation error", "environment variable "+v.Key+" is given twice")
		}
		seen[v.Key] = true
	}
	return nil
}
