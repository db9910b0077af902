package docker

import (
	"net/netip"
	"strings"
	"testing"
)

// The rules are also what the operator is told to add when Verdict cannot: one per chain and
// IPv4 destination, matched by the bridge's name.
func TestBlockRules(t *testing.T) {
	nets := []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16"), netip.MustParsePrefix("fd00:ec2::/32"), netip.MustParsePrefix("10.0.0.0/8")}
	var got []string
	for _, r := range blockRules("verdict-runs", nets) {
		got = append(got, r.String())
	}
	want := []string{
		"iptables -I DOCKER-USER -i verdict-runs -d 169.254.0.0/16 -m comment --comment verdict -j DROP",
		"iptables -I INPUT -i verdict-runs -d 169.254.0.0/16 -m comment --comment verdict -j DROP",
		"iptables -I DOCKER-USER -i verdict-runs -d 10.0.0.0/8 -m comment --comment verdict -j DROP",
		"iptables -I INPUT -i verdict-runs -d 10.0.0.0/8 -m comment --comment verdict -j DROP",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rules:\n%s", strings.Join(got, "\n"))
	}
}
