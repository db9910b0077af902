//go:build integration

package app_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestWebShardedRunPage: a sharded run's page lists its containers (status, runner, exit code,
// report links) and shows every container's log, each line marked with its shard, or one
// container's log on its tab; a container the run lacks is said so.
func TestWebShardedRunPage(t *testing.T) {
	h := shardHarness(t, "sqlite", "team")
	admin := h.signup("shard-page@example.com", "Shard Page Co")
	task := h.queue(bearer(admin.token), map[string]any{"image": shardedImage, "shards": 3})
	r := h.waitFor(bearer(admin.token), task, 120*time.Second, final)
	if got := r.str("execution", "status"); got != "PASSED" {
		t.Fatalf("the sharded run ended %s", got)
	}
	b := h.browser(t)
	b.get("/login")
	wantRedirect(t, "sign-in", b.post("/login", url.Values{"email": {admin.email}, "password": {password}}), "/runs")

	p := b.get("/runs/" + task)
	wantStatus(t, "the sharded run's page", p, 200, "Shards")
	for i := 1; i <= 3; i++ {
		for _, want := range []string{fmt.Sprintf(`id="shard-%d"`, i), fmt.Sprintf("Shard %d of 3", i),
			fmt.Sprintf(`href="?shard=%d#log-heading"`, i), fmt.Sprintf("[shard %d] ", i)} {
			if !strings.Contains(p.body, want) {
				t.Fatalf("the run's page lacks %q:\n%s", want, p.body)
			}
		}
	}
	if strings.Count(p.body, ">PASSED<") < 4 {
		t.Errorf("the run and its three shards are not all shown PASSED")
	}
	one := b.get("/runs/" + task + "?shard=2")
	wantStatus(t, "shard 2's tab", one, 200, "shard 2/3: files")
	if strings.Contains(one.body, "[shard 1] ") || strings.Contains(one.body, "shard 1/3: files") || !strings.Contains(one.body, `aria-current="page">Shard 2 of 3`) {
		t.Fatalf("shard 2's tab shows another shard's log or is not the current tab:\n%s", one.body)
	}
	wantStatus(t, "a container the run lacks", b.get("/runs/"+task+"?shard=9"), 200, "This run has no container 9.")
}
