package run

import (
	"net"
	"net/url"
	"strings"
)

// SplitCommand splits a command line into words the way a POSIX shell would for plain words,
// single quotes, double quotes and backslash escapes, without running a shell: the image need
// not have one, and nothing is expanded.
func SplitCommand(s string) []string {
	var (
		words   []string
		cur     strings.Builder
		inWord  bool
		quote   rune
		escaped bool
	)
	for _, r := range s {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\\':
			escaped, inWord = true, true
		case quote == '"':
			if r == '"' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// HostAlias is the name under which a run's container reaches the host.
const HostAlias = "host.docker.internal"

// containerURL rewrites a base URL on the host's loopback so that it reaches the host from
// inside the container (through the engine's host gateway). Other URLs pass unchanged.
func containerURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	host := u.Hostname()
	ip := net.ParseIP(host)
	if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return raw
	}
	if port := u.Port(); port != "" {
		u.Host = net.JoinHostPort(HostAlias, port)
	} else {
		u.Host = HostAlias
	}
	return u.String()
}
