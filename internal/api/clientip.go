package api

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ClientIP is the address the per-IP rate limits count a request by (clientIP), for handlers
// mounted beside the API's routes (the Socket.IO handshake's limit).
func ClientIP(r *http.Request, trusted []netip.Prefix) string { return clientIP(r, trusted) }

// clientIP is the socket peer, unless the peer is a trusted proxy: then the right-most address
// of X-Forwarded-For that is not itself a trusted proxy. Left-most entries are
// whatever the client wrote and are never believed.
func clientIP(r *http.Request, trusted []netip.Prefix) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	peer = peer.Unmap()
	if !isTrusted(peer, trusted) {
		return peer.String()
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break // a malformed hop: stop believing the chain here
		}
		a = a.Unmap()
		if !isTrusted(a, trusted) {
			return a.String()
		}
		peer = a
	}
	return peer.String()
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
