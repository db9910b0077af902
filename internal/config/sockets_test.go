package config

import (
	"strings"
	"testing"
)

func TestSocketSettings(t *testing.T) {
	c, err := LoadFrom(base())
	if err != nil {
		t.Fatal(err)
	}
	if c.Limits.SocketsPerUser != 20 || c.Limits.SocketsPerOrg != 200 || c.Limits.SocketQueueMB != 4 || c.Limits.SocketQueueTotalMB != 64 {
		t.Fatalf("defaults: %d per user, %d per organization, %d MiB per connection, %d MiB together",
			c.Limits.SocketsPerUser, c.Limits.SocketsPerOrg, c.Limits.SocketQueueMB, c.Limits.SocketQueueTotalMB)
	}
	env := base()
	env["VERDICT_SOCKETS_PER_USER"], env["VERDICT_SOCKETS_PER_ORG"] = "5", "50"
	env["VERDICT_SOCKET_QUEUE_MB"], env["VERDICT_SOCKET_QUEUE_TOTAL_MB"] = "2", "2"
	if c, err := LoadFrom(env); err != nil || c.Limits.SocketsPerUser != 5 || c.Limits.SocketsPerOrg != 50 || c.Limits.SocketQueueMB != 2 || c.Limits.SocketQueueTotalMB != 2 {
		t.Fatalf("set: %+v, %v", c, err)
	}
	for name, bad := range map[string][]string{
		"VERDICT_SOCKETS_PER_USER":      {"0", "-1", "100001"},
		"VERDICT_SOCKETS_PER_ORG":       {"0", "1000001"},
		"VERDICT_SOCKET_QUEUE_MB":       {"0", "1025"},
		"VERDICT_SOCKET_QUEUE_TOTAL_MB": {"3", "1048577"}, // less than the per-connection 4
	} {
		for _, v := range bad {
			env := base()
			env[name] = v
			if _, err := LoadFrom(env); err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("%s=%s: err %v, want one naming %s", name, v, err, name)
			}
		}
	}
}
