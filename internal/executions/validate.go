package executions

import (
	"net/url"
	"path"
	"strings"

	"verdict/internal/domain"
)

func validEnvironment(s string) bool {
	for _, e := range domain.Environments {
		if s == e {
			return true
		}
	}
	return false
}

func validURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// validateFolder accepts "all", "" or a relative folder path without "..".
func validateFolder(f string) error {
	if f == "" || f == "all" {
		return nil
	}
	if strings.HasPrefix(f, "/") || strings.Contains(f, "\x00") || strings.Contains(f, "\\") {
		return domain.BadRequest("Validation error", "folder must be a relative path")
	}
	for _, part := range strings.Split(path.Clean(f), "/") {
		if part == ".." {
			return domain.BadRequest("Validation error", "folder must not contain ..")
		}
	}
	return nil
}

func validateEnv(name, value string) error {
	if !domain.ValidEnvName(name) {
		return domain.BadRequest("Validation error", "environment variable name "+quote(name)+" is not valid (letters, digits and _, not starting with a digit)")
	}
	if domain.IsContractEnv(name) {
		return domain.BadRequest("Reserved variable", "environment variable "+name+" "+errReservedName)
	}
	if len(value) > maxEnvValueLen || strings.Contains(value, "\x00") {
		return domain.BadRequest("Validation error", "the value of "+name+" is too long or holds a NUL byte")
	}
	return nil
}

// validateReportFolder accepts a folder under /app, given with or without the /app/ prefix,
// and returns it relative to /app. Its first segment may not start with "~".
func validateReportFolder(f string) (string, error) {
	f = strings.TrimPrefix(strings.TrimSpace(f), "/app/")
	f = strings.Trim(f, "/")
	if f == "" || strings.Contains(f, "\\") || strings.Contains(f, "\x00") || path.Clean(f) != f || strings.HasPrefix(f, "..") || strings.Contains(f, "/..") {
		return "", domain.BadRequest("Validation error", "report folders must be paths under /app, e.g. /app/playwright-report")
	}
	for _, part := range strings.Split(f, "/") {
		if part == ".." || part == "." {
			return "", domain.BadRequest("Validation error", "report folders must be paths under /app")
		}
	}
	// A report URL's first segment "~<token>" is a report link's token, never a folder.
	if strings.HasPrefix(f, "~") {
		return "", domain.BadRequest("Validation error", "report folders must not start with ~ (report links use it)")
	}
	return f, nil
}

func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return "\"" + s + "\""
}
