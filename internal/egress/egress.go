// Package egress is how Verdict calls URLs its tenants chose (webhooks, chat hooks, a GitHub
// Enterprise or Jira address): never a loopback, private, link-local, metadata or otherwise
// internal address, unless the operator allows the host (VERDICT_EGRESS_ALLOW). The address is
// checked where it is dialled, after name resolution, so a name that resolves to an internal
// address (DNS rebinding included) is refused as a literal one is; redirects are not followed and
// no proxy from the environment is used, since either would dial past the check.
package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// ErrRefused is what a call to a forbidden address fails with (errors.Is), from CheckURL and
// from the Client's dial.
var ErrRefused = errors.New("egress: address refused")

// Guard decides which addresses a tenant's URL may reach. The zero value allows no internal
// address.
type Guard struct {
	hosts    map[string]bool // host names and literal addresses allowed, lower case
	prefixes []netip.Prefix  // networks allowed
}

// New builds a Guard allowing allow's entries: a host name ("hooks.internal"), an address
// ("10.0.0.7", "::1") or a network ("10.20.0.0/16"). An entry that is none of these is an error
// naming it.
func New(allow []string) (*Guard, error) {
	g := &Guard{hosts: map[string]bool{}}
	for _, e := range allow {
		e = strings.ToLower(strings.TrimSpace(e))
		switch {
		case e == "":
		case strings.Contains(e, "/"):
			p, err := netip.ParsePrefix(e)
			if err != nil {
				return nil, fmt.Errorf("egress: %q is not a network such as 10.0.0.0/8", e)
			}
			g.prefixes = append(g.prefixes, p.Masked())
		case validHost(e):
			if a, err := netip.ParseAddr(e); err == nil {
				g.prefixes = append(g.prefixes, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			} else {
				g.hosts[e] = true
			}
		default:
			return nil, fmt.Errorf("egress: %q is not a host name, an address or a network", e)
		}
	}
	return g, nil
}

// validHost reports a host name or a literal address.
func validHost(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	if len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// internal are the networks that are not the public internet, beyond what netip's predicates
// name: "this network", shared address space (carrier NAT), IETF protocol assignments,
// benchmarking, reserved, NAT64 and 6to4 (which can wrap an internal IPv4 address), and the
// documentation ranges.
var internal = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2002::/16"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("100::/64"),
}

// Internal reports whether a is not a public internet address: loopback, private (10/8,
// 172.16/12, 192.168/16, fc00::/7), link-local (169.254/16 with the clouds' metadata address
// 169.254.169.254, fe80::/10), unspecified, multicast, or one of the reserved ranges.
func Internal(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return true
	}
	if a.Is4() && a == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return true
	}
	for _, p := range internal {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// allowedAddr reports whether the operator allowed a.
func (g *Guard) allowedAddr(a netip.Addr) bool {
	if g == nil {
		return false
	}
	a = a.Unmap()
	for _, p := range g.prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// allowedHost reports whether the operator allowed the host name h.
func (g *Guard) allowedHost(h string) bool {
	return g != nil && g.hosts[strings.ToLower(strings.TrimSuffix(h, "."))]
}

// Allows reports whether the operator allowed host (a name, or a literal address in an
// allowed network): the one place a plain-http address of a tenant's is acceptable, an
// internal service on the operator's own network.
func (g *Guard) Allows(host string) bool {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return g.allowedAddr(a)
	}
	return g.allowedHost(host)
}

// CheckURL is the check of a URL when a tenant saves it: http or https, a host, no user
// information, and not a literal internal address the operator did not allow. A name is checked
// again when it is dialled (the Client). The error says what is wrong, without the URL's
// secrets, for a 400.
func (g *Guard) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return errors.New("must be an http or https URL with a host")
	}
	if u.User != nil {
		return errors.New("must not carry a user name or password")
	}
	host := u.Hostname()
	if a, err := netip.ParseAddr(host); err == nil {
		if Internal(a) && !g.allowedAddr(a) {
			return fmt.Errorf("%w: %s is a loopback, private, link-local or reserved address", ErrRefused, host)
		}
		return nil
	}
	if !validHost(strings.ToLower(strings.TrimSuffix(host, "."))) {
		return errors.New("must name a valid host")
	}
	if h := strings.ToLower(strings.TrimSuffix(host, ".")); (h == "localhost" || strings.HasSuffix(h, ".localhost")) && !g.allowedHost(h) {
		return fmt.Errorf("%w: %s is the loopback host", ErrRefused, host)
	}
	return nil
}

// Client is an HTTP client for tenants' URLs: each connection's address is checked as it is
// dialled (after resolution, so a name resolving to an internal address is refused), redirects
// are answered as they are (not followed), no proxy is used, and a call takes at most timeout.
func (g *Guard) Client(timeout time.Duration) *http.Client {
	t := &http.Transport{
		Proxy:                 nil,
		DialContext:           g.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: timeout,
	}
	return &http.Client{Transport: t, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// DialContext dials addr ("host:port") unless the address it reaches is internal and not
// allowed: a host name the operator allowed is dialled as it resolves; any other is checked on
// each address the dialer tries.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if !g.allowedHost(host) {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: %s", ErrRefused, address)
			}
			if Internal(ap.Addr()) && !g.allowedAddr(ap.Addr()) {
				return fmt.Errorf("%w: %s is a loopback, private, link-local or reserved address", ErrRefused, ap.Addr())
			}
			return nil
		}
	}
	return d.DialContext(ctx, network, addr)
}
