package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/coreos/go-iptables/iptables"
	"github.com/moby/moby/client"
)

// DefaultNetwork is the engine network run containers join when Options.Network is empty.
const DefaultNetwork = "verdict-runs"

// DefaultBlockedNets are the destinations runs may not reach when Options.BlockedNets is nil:
// link-local addresses, where clouds serve instance metadata and credentials.
var DefaultBlockedNets = []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16")}

// The run network's driver options: containers on it cannot reach each other (the engine
// drops traffic between them), and its bridge interface carries the network's name, so the
// host's firewall rules can name it.
const (
	optICC    = "com.docker.network.bridge.enable_icc"
	optBridge = "com.docker.network.bridge.name"
	labelNet  = "dev.verdict.network"
)

// network is the engine network of run containers, "none" for none.
func (b *Backend) network() string {
	if b.opts.Network == "" {
		return DefaultNetwork
	}
	return b.opts.Network
}

// EnsureNetwork makes the run network ready: it creates it when it is missing, refuses one that
// would let runs reach each other, and drops traffic from it to the blocked destinations with
// host firewall rules when it can (see firewall). Start calls it before the first run; calling
// it when the service starts reports what the operator must do at once. It succeeds once per
// Backend, and again after the network was found gone.
func (b *Backend) EnsureNetwork(ctx context.Context) error {
	name := b.network()
	if name == "none" {
		return nil
	}
	b.netMu.Lock()
	defer b.netMu.Unlock()
	if b.netReady {
		return nil
	}
	res, err := b.cli.NetworkInspect(ctx, name, client.NetworkInspectOptions{})
	if (err != nil && cerrdefs.IsNotFound(err)) || (err == nil && res.Network.Name != name) {
		noIPv6 := false
		_, cerr := b.cli.NetworkCreate(ctx, name, client.NetworkCreateOptions{
			Driver:     "bridge",
			EnableIPv6: &noIPv6,
			Options:    map[string]string{optICC: "false", optBridge: name},
			Labels:     map[string]string{labelNet: "runs"},
		})
		// Another Verdict on the engine may have created it meanwhile: it is looked at again.
		if res, err = b.cli.NetworkInspect(ctx, name, client.NetworkInspectOptions{}); err != nil && cerr != nil {
			err = fmt.Errorf("create: %w", cerr)
		}
	}
	if err != nil {
		return fmt.Errorf("run network %s: %w", name, err)
	}
	n := res.Network
	if n.Driver != "bridge" || n.Options[optICC] != "false" || n.Options[optBridge] != name {
		return fmt.Errorf("run network %s exists but does not keep runs apart (want driver bridge with %s=false and %s=%s, it has driver %s and options %v): remove it (docker network rm %s) and Verdict creates it",
			name, optICC, optBridge, name, n.Driver, n.Options, name)
	}
	b.firewall(name)
	b.netReady = true
	return nil
}

// forgetNetwork makes the next EnsureNetwork look again: the network was removed behind
// Verdict's back (docker network prune removes an unused one).
func (b *Backend) forgetNetwork() {
	b.netMu.Lock()
	b.netReady = false
	b.netMu.Unlock()
}

// isNetworkMissing tells whether a create failed because its network does not exist.
func isNetworkMissing(err error) bool {
	return cerrdefs.IsNotFound(err) && strings.Contains(strings.ToLower(err.Error()), "network")
}

// blockRule is one iptables rule of the filter table that drops traffic from the run bridge to
// a blocked destination.
type blockRule struct {
	chain string
	spec  []string
}

func (r blockRule) String() string { return "iptables -I " + r.chain + " " + strings.Join(r.spec, " ") }

// blockRules drop what runs on bridge send to the blocked IPv4 destinations: routed through the
// host (a cloud's metadata address) in DOCKER-USER, which the engine evaluates before its own
// forwarding rules and never flushes, and to the host's own addresses in INPUT. IPv6 needs no
// rule: the run network has no IPv6.
func blockRules(bridge string, nets []netip.Prefix) []blockRule {
	var rules []blockRule
	for _, p := range nets {
		if !p.Addr().Is4() {
			continue
		}
		for _, chain := range []string{"DOCKER-USER", "INPUT"} {
			rules = append(rules, blockRule{chain, []string{"-i", bridge, "-d", p.String(), "-m", "comment", "--comment", "verdict", "-j", "DROP"}})
		}
	}
	return rules
}

// firewall installs the block rules, each once, when the engine's network stack is this host's
// and Verdict may change its firewall; otherwise, or when that fails, it warns with the rules
// the operator must add on the engine's host. It also warns when the engine does not keep the
// network's containers apart (its iptables management is off).
func (b *Backend) firewall(bridge string) {
	rules := blockRules(bridge, b.blocked())
	var manual []string
	for _, r := range rules {
		manual = append(manual, r.String())
	}
	warn := func(reason string) {
		if len(rules) > 0 {
			b.log().Warn("runs can reach the blocked destinations (VERDICT_RUN_BLOCKED_CIDRS, cloud metadata by default): "+reason+
				"; add these rules on the Docker engine's host (after each reboot too)", "network", bridge, "rules", strings.Join(manual, "; "))
		}
	}
	switch _, err := net.InterfaceByName(bridge); {
	case os.Geteuid() != 0:
		warn("Verdict does not run as root, so it cannot add its firewall rules")
		return
	case err != nil:
		warn("the engine's network is not on this host (a remote engine, or Verdict in a container)")
		return
	}
	ipt, err := iptables.New()
	if err != nil {
		warn("iptables is not usable here: " + err.Error())
		return
	}
	// With the engine's iptables management off there is no DOCKER-USER chain and no rule
	// that keeps the network's containers apart.
	if ok, err := ipt.ChainExists("filter", "DOCKER-USER"); err != nil || !ok {
		b.log().Warn("the Docker engine does not manage iptables (no DOCKER-USER chain): runs can reach each other and the blocked destinations; enable the engine's iptables option", "network", bridge)
		return
	}
	if ok, err := ipt.Exists("filter", "FORWARD", "-i", bridge, "-o", bridge, "-j", "DROP"); err == nil && !ok {
		b.log().Warn("the engine has no rule dropping traffic between the run network's containers: runs can reach each other", "network", bridge)
	}
	var errs []error
	for _, r := range rules {
		if ok, err := ipt.Exists("filter", r.chain, r.spec...); err != nil {
			errs = append(errs, err)
		} else if !ok {
			errs = append(errs, ipt.Insert("filter", r.chain, 1, r.spec...))
		}
	}
	if err := errors.Join(errs...); err != nil {
		warn("adding the firewall rules failed: " + err.Error())
		return
	}
	if len(rules) > 0 {
		b.log().Info("runs cannot reach the blocked destinations", "network", bridge, "rules", strings.Join(manual, "; "))
	}
}

func (b *Backend) blocked() []netip.Prefix {
	if b.opts.BlockedNets == nil {
		return DefaultBlockedNets
	}
	return b.opts.BlockedNets
}
