package analyzer

import (
	"net"
	"net/url"
	"regexp"
	"strings"
)

// runContext is what the rules know of the run beyond a failure's text.
type runContext struct {
	baseOrigin string // scheme://host[:port] of BASE_URL, "" when unknown
	baseHost   string // lower-case
	basePort   string // explicit or the scheme's default
}

func newRunContext(baseURL string) *runContext {
	rc := &runContext{}
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil || u.Host == "" {
		return rc
	}
	rc.baseOrigin = u.Scheme + "://" + u.Host
	rc.baseHost = strings.ToLower(u.Hostname())
	rc.basePort = u.Port()
	if rc.basePort == "" {
		rc.basePort = defaultPorts[u.Scheme]
	}
	return rc
}

var defaultPorts = map[string]string{"http": "80", "https": "443", "ws": "80", "wss": "443"}

// targetPatterns find the host (and port) a network error is about; group 1 is the host or
// host:port, group 2 (when present) the port.
var targetPatterns = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\b(?:https?|wss?)://([^\s/"'<>()\[\]{},;?#]+)`),
	regexp.MustCompile(`host='([^']+)', port=(\d+)`),                                                                   // urllib3
	regexp.MustCompile(`(?i)\b(?:ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENOTFOUND|EAI_AGAIN) ([\w.\-\[\]:]+)`), // Node
	regexp.MustCompile(`(?i)\bconnection to ([\w.\-]+:\d+) refused`),                                                   // JDBC
	regexp.MustCompile(`(?i)server at "([\w.\-]+)"[^\n]*?port (\d+)`),                                                  // psycopg
	regexp.MustCompile(`(?i)on host "([\w.\-]+)"[^\n]*?port (\d+)`),                                                    // psycopg, older
	regexp.MustCompile(`(?i)\bconnect to ([\w.\-]+(?::\d+)?)`),                                                         // Apache HttpClient, curl
	regexp.MustCompile(`(?i)\b(?:UnknownHostException|resolve host):? ([\w.\-]+)`),
}

// maxTargetScan bounds the text searched for a host.
const maxTargetScan = 4 << 10

// findTarget returns what host a network failure is about, as "http://app:3000" or
// "db:5432", and whether it is the run's BASE_URL host (then the BASE_URL's origin is
// returned); "" when the text names none.
func (rc *runContext) findTarget(text string) (string, bool) {
	if len(text) > maxTargetScan {
		text = text[:maxTargetScan]
	}
	first := ""
	for i, p := range targetPatterns {
		for _, m := range p.FindAllStringSubmatch(text, 4) {
			target := m[1]
			if len(m) > 2 && m[2] != "" {
				target = net.JoinHostPort(m[1], m[2])
			}
			host, port := splitHostPort(target)
			if i == 0 && isDocsHost(host) {
				continue
			}
			if i == 0 { // a URL: keep its scheme, which also gives the default port
				target = m[0]
				if port == "" {
					port = defaultPorts[strings.ToLower(m[0][:strings.Index(m[0], ":")])]
				}
			}
			if rc.isBase(host, port) {
				return rc.baseOrigin, true
			}
			if first == "" {
				first = target
			}
		}
	}
	return first, false
}

func splitHostPort(s string) (string, string) {
	if h, p, err := net.SplitHostPort(s); err == nil {
		return strings.ToLower(h), p
	}
	return strings.ToLower(strings.Trim(s, "[]")), ""
}

// isBase reports whether host:port is the BASE_URL's. A loopback BASE_URL reaches the
// container as host.docker.internal, so loopback names count as one.
func (rc *runContext) isBase(host, port string) bool {
	if rc.baseHost == "" {
		return false
	}
	same := host == rc.baseHost || isLoopback(host) && isLoopback(rc.baseHost)
	return same && (port == "" || port == rc.basePort)
}

func isLoopback(host string) bool {
	switch host {
	case "localhost", "host.docker.internal", "::1":
		return true
	}
	return strings.HasPrefix(host, "127.")
}

// docsHosts serve the documentation links error messages carry, never an application.
var docsHosts = []string{"selenium.dev", "sqlalche.me", "playwright.dev", "cypress.io", "github.com", "pytest.org", "python.org", "mozilla.org", "spring.io", "stackoverflow.com"}

func isDocsHost(host string) bool {
	for _, d := range docsHosts {
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}
