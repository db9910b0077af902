package domain

import (
	"strings"
	"time"
)

// Source control: the hosts a project's code lives on (GitHub, GitLab), which queue its runs
// through inbound hooks and hear of each run's verdict as a commit status and a pull-request
// comment.

// Source-control providers, as the API and the run's trigger label name them.
const (
	ProviderGitHub = "github"
	ProviderGitLab = "gitlab"
)

// SCMProviders are the source-control hosts Verdict reports to and takes hooks from.
var SCMProviders = []string{ProviderGitHub, ProviderGitLab}

// ValidSCMProvider reports whether p is one of SCMProviders.
func ValidSCMProvider(p string) bool { return p == ProviderGitHub || p == ProviderGitLab }

// MaxRepositoryLen bounds a project's repository path (GitLab allows 255 characters).
const MaxRepositoryLen = 255

// ValidRepository reports whether r names a repository: "owner/name" on GitHub, or a GitLab
// project's path ("group/sub/name"): two or more segments of A-Z, a-z, 0-9, '.', '_' and '-',
// none of them "." or "..", a segment not starting with '.' or '-', at most MaxRepositoryLen.
func ValidRepository(r string) bool {
	if len(r) == 0 || len(r) > MaxRepositoryLen {
		return false
	}
	segs := strings.Split(r, "/")
	if len(segs) < 2 {
		return false
	}
	for _, s := range segs {
		if s == "" || s[0] == '.' || s[0] == '-' {
			return false
		}
		for i := 0; i < len(s); i++ {
			c := s[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
				return false
			}
		}
	}
	return true
}

// Hook is a project's inbound webhook from a source-control host: a delivery signed with its
// secret (GitHub's HMAC, GitLab's token) whose event matches queues a run of the project.
type Hook struct {
	ID             string
	OrganizationID string
	ProjectID      string
	Provider       string // ProviderGitHub or ProviderGitLab
	SecretCipher   string // the secret, sealed with the source-control box
	// Branches are the globs of the branches whose events queue a run ("main", "release/*");
	// empty: every branch.
	Branches []string
	// Events are the host's event names that queue a run (GitHub "push", "pull_request";
	// GitLab "push", "merge_request"); empty: both of the host's.
	Events []string
	// BaseURLTemplate, when set, is the base URL of the runs the hook queues, with {pr},
	// {branch} and {commit} replaced ("https://pr-{pr}.preview.example.com").
	BaseURLTemplate string
	CreatedAt       time.Time
}
