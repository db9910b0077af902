package scm

import (
	"net/http"
	"time"

	"verdict/internal/domain"
	"verdict/internal/scm/github"
	"verdict/internal/scm/gitlab"
	"verdict/internal/scm/host"
)

// provider is a source-control host Verdict knows: its REST API at an address, and its hooks.
type provider struct {
	open  func(apiURL string, client *http.Client, timeout time.Duration) host.Host
	hooks host.Hooks
}

// providers are the hosts, by their name in the API. A new host is a package implementing
// host.Host and host.Hooks, and one line here.
var providers = map[string]provider{
	domain.ProviderGitHub: {open: github.New, hooks: github.Hooks},
	domain.ProviderGitLab: {open: gitlab.New, hooks: gitlab.Hooks},
}

// open is provider's API at apiURL ("" for the public host), through the egress guard.
func (s *Service) open(name, apiURL string) host.Host {
	return providers[name].open(apiURL, s.client, s.timeout)
}
