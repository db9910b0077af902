package scm_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/egress"
	"verdict/internal/executions"
	"verdict/internal/identity"
	"verdict/internal/scm"
	"verdict/internal/scm/github"
	"verdict/internal/scm/scmtest"
	"verdict/internal/store"
	"verdict/internal/store/sqlstore/sqlitetest"
	"verdict/internal/testenv"
)

// The service's rules on the real store (a SQLite file) with fake hosts: the fast tier.

// runs records what hooks queue; refuse makes the next Queue fail.
type runs struct {
	queued []executions.QueueInput
	as     []*identity.Principal
	refuse error
}

func (r *runs) Queue(_ context.Context, p *identity.Principal, in executions.QueueInput) (*domain.Execution, error) {
	if r.refuse != nil {
		err := r.refuse
		r.refuse = nil
		return nil, err
	}
	r.queued, r.as = append(r.queued, in), append(r.as, p)
	return &domain.Execution{TaskID: "run-" + domain.RandomHex(4)}, nil
}

type fixture struct {
	st      store.Store
	svc     *scm.Service
	runs    *runs
	admin   *identity.Principal
	dev     *identity.Principal
	viewer  *identity.Principal
	project *domain.Project
}

func setup(t *testing.T, allow ...string) *fixture {
	st := sqlitetest.Open(t)
	now := time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC)
	org := sqlitetest.Org(t, st, "Shop Co", domain.PlanTeam, now)
	guard, err := egress.New(allow)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{st: st, runs: &runs{},
		admin:  sqlitetest.As(sqlitetest.Member(t, st, org, "admin@example.com", domain.RoleAdmin)),
		dev:    sqlitetest.As(sqlitetest.Member(t, st, org, "dev@example.com", domain.RoleDeveloper)),
		viewer: sqlitetest.As(sqlitetest.Member(t, st, org, "viewer@example.com", domain.RoleViewer))}
	f.svc = scm.New(scm.Deps{Store: st, Box: sqlitetest.Box(t, 0x51), Egress: guard, Runs: f.runs,
		PublicURL: "https://verdict.example.com", Clock: func() time.Time { return now }, Timeout: 5 * time.Second})
	f.project = &domain.Project{ID: domain.NewID(), OrganizationID: org.ID, Name: "Shop", Image: "img", Repository: "acme/shop",
		CreatedAt: now, UpdatedAt: now}
	if err := st.Projects().Create(context.Background(), f.project); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestSaveToken(t *testing.T) {
	ctx := context.Background()
	f := setup(t, "127.0.0.1")
	gh := scmtest.NewGitHub(t, "ghp_good", "acme/shop")
	_, err := f.svc.Save(ctx, f.dev, "github", scm.SaveInput{Token: "ghp_good", APIURL: gh.URL})
	testenv.WantError(t, err, 403, "Forbidden", "")
	_, err = f.svc.Save(ctx, f.admin, "github", scm.SaveInput{Token: "ghp_bad", APIURL: gh.URL})
	testenv.WantError(t, err, 400, "Invalid token", "GitHub refused this token; nothing was saved")
	_, err = f.svc.Save(ctx, f.admin, "github", scm.SaveInput{Token: "has space", APIURL: gh.URL})
	testenv.WantError(t, err, 400, "Validation error", "token must be a token of 1 to 1024 characters without spaces")
	_, err = f.svc.Save(ctx, f.admin, "bitbucket", scm.SaveInput{Token: "x"})
	testenv.WantError(t, err, 404, "Integration not found", "")
	if st, _ := f.svc.Settings(ctx, f.viewer, "github"); st.Configured {
		t.Fatal("a refused token was stored")
	}
	st, err := f.svc.Save(ctx, f.admin, "github", scm.SaveInput{Token: " ghp_good ", APIURL: gh.URL + "/"})
	if err != nil || !st.Configured || st.APIURL != gh.URL {
		t.Fatalf("save: %+v %v", st, err)
	}
	in, err := f.st.Integrations().Get(ctx, f.admin.OrgID, "github")
	if err != nil || strings.Contains(in.KeyCipher, "ghp_good") || in.KeyCipher == "" {
		t.Fatalf("stored: %+v %v", in, err)
	}
	if st, _ := f.svc.Settings(ctx, f.viewer, "github"); !st.Configured || st.APIURL != gh.URL {
		t.Fatalf("settings: %+v", st)
	}
}

func TestSaveRefusesInternalAddresses(t *testing.T) {
	ctx := context.Background()
	f := setup(t) // the operator allows nothing
	gh := scmtest.NewGitHub(t, "ghp_good", "acme/shop")
	for _, u := range []string{"http://169.254.169.254/api/v3", "http://localhost:8080", "ftp://github.example.com", "http://user:pw@github.example.com"} {
		_, err := f.svc.Save(ctx, f.admin, "github", scm.SaveInput{Token: "ghp_good", APIURL: u})
		testenv.WantError(t, err, 400, "Validation error", "")
	}
	// 127.0.0.1 through its name's check at the dial.
	_, err := f.svc.Save(ctx, f.admin, "github", scm.SaveInput{Token: "ghp_good", APIURL: gh.URL})
	testenv.WantError(t, err, 400, "Validation error", "")
	if len(gh.Requests()) != 0 {
		t.Fatalf("the fake on 127.0.0.1 was called: %d requests", len(gh.Requests()))
	}
}

func TestHooks(t *testing.T) {
	ctx := context.Background()
	f := setup(t)
	for _, c := range []struct {
		in  scm.HookInput
		msg string
	}{
		{scm.HookInput{Provider: "bitbucket"}, "provider must be github or gitlab"},
		{scm.HookInput{Provider: "github", Branches: []string{"main", "has space"}}, `branches: "has space" must be a glob`},
		{scm.HookInput{Provider: "github", Events: []string{"merge_request"}}, `events: "merge_request" is not one of push, pull_request`},
		{scm.HookInput{Provider: "gitlab", BaseURL: "ftp://{pr}.example.com"}, "baseUrl must be an http(s) URL template"},
	} {
		_, err := f.svc.CreateHook(ctx, f.dev, f.project.ID, c.in)
		testenv.WantError(t, err, 400, "Validation error", "")
		if !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%+v: %v, want %q", c.in, err, c.msg)
		}
	}
	_, err := f.svc.CreateHook(ctx, f.viewer, f.project.ID, scm.HookInput{Provider: "github"})
	testenv.WantError(t, err, 403, "Forbidden", "")
	_, err = f.svc.CreateHook(ctx, f.dev, "nope", scm.HookInput{Provider: "github"})
	testenv.WantError(t, err, 404, "Project not found", "")

	h, err := f.svc.CreateHook(ctx, f.dev, f.project.ID, scm.HookInput{Provider: "github", Branches: []string{"main", "release/*"},
		BaseURL: "https://pr-{pr}-{branch}.preview.example.com"})
	if err != nil || len(h.Secret) != 64 || h.URL != "https://verdict.example.com/api/hooks/github/"+h.ID {
		t.Fatalf("hook: %+v %v", h, err)
	}
	stored, _ := f.st.SourceControl().FindHook(ctx, h.ID)
	if strings.Contains(stored.SecretCipher, h.Secret) {
		t.Fatal("the secret is stored in the clear")
	}

	deliver := func(action, base, delivery, secret string) (*scm.Receipt, error) {
		body := []byte(`{"action":"` + action + `","number":7,"pull_request":{"head":{"ref":"Feature/Login_2","sha":"0123456789abcdef0123456789abcdef01234567"},"base":{"ref":"` +
			base + `"}},"repository":{"full_name":"acme/shop"}}`)
		hdr := http.Header{}
		hdr.Set("X-GitHub-Event", "pull_request")
		hdr.Set("X-GitHub-Delivery", delivery)
		hdr.Set("X-Hub-Signature-256", github.Sign(body, secret))
		return f.svc.Receive(ctx, "github", h.ID, hdr, body)
	}
	_, err = deliver("opened", "main", "d1", "wrong")
	testenv.WantError(t, err, 401, "Invalid signature", "")
	_, err = f.svc.Receive(ctx, "gitlab", h.ID, http.Header{}, nil)
	testenv.WantError(t, err, 404, "Hook not found", "")
	if len(f.runs.queued) != 0 {
		t.Fatal("a refused delivery queued a run")
	}
	rc, err := deliver("opened", "release/1.2", "d1", h.Secret)
	if err != nil || rc.TaskID == "" || len(f.runs.queued) != 1 {
		t.Fatalf("delivery: %+v %v", rc, err)
	}
	in := f.runs.queued[0]
	if in.ProjectID != f.project.ID || in.BaseURL != "https://pr-7-feature-login-2.preview.example.com" ||
		in.Labels["trigger"] != "github" || in.Labels["pr"] != "7" || in.Labels["branch"] != "Feature/Login_2" ||
		in.Labels["repo"] != "acme/shop" || in.Labels["commit"] != "0123456789abcdef0123456789abcdef01234567" {
		t.Fatalf("queued: %+v", in)
	}
	if p := f.runs.as[0]; p.OrgID != f.project.OrganizationID || p.UserID != "" || p.Role != domain.RoleDeveloper {
		t.Fatalf("queued as %+v, want the organization's automation", p)
	}
	if rc, err := deliver("opened", "release/1.2", "d1", h.Secret); err != nil || !rc.Duplicate || len(f.runs.queued) != 1 {
		t.Fatalf("duplicate: %+v %v", rc, err)
	}
	if rc, err := deliver("opened", "develop", "d2", h.Secret); err != nil || rc.TaskID != "" || !strings.Contains(rc.Note, "develop") {
		t.Fatalf("another branch: %+v %v", rc, err)
	}
	// A run the plan refuses: the refusal is the answer, and the host's redelivery may try again.
	f.runs.refuse = domain.Forbidden("Test run limit exceeded", "no more")
	_, err = deliver("synchronize", "main", "d3", h.Secret)
	testenv.WantError(t, err, 403, "Test run limit exceeded", "")
	if rc, err := deliver("synchronize", "main", "d3", h.Secret); err != nil || rc.TaskID == "" {
		t.Fatalf("redelivery after a refusal: %+v %v", rc, err)
	}

	list, err := f.svc.ListHooks(ctx, f.viewer, f.project.ID)
	if err != nil || len(list) != 1 || list[0].ID != h.ID {
		t.Fatalf("list: %+v %v", list, err)
	}
	testenv.WantError(t, f.svc.DeleteHook(ctx, f.viewer, f.project.ID, h.ID), 403, "Forbidden", "")
	if err := f.svc.DeleteHook(ctx, f.dev, f.project.ID, h.ID); err != nil {
		t.Fatal(err)
	}
	testenv.WantError(t, f.svc.DeleteHook(ctx, f.dev, f.project.ID, h.ID), 404, "Hook not found", "")
	_, err = deliver("opened", "main", "d4", h.Secret)
	testenv.WantError(t, err, 404, "Hook not found", "")
}

// Queued enqueues a pending status only for a run that names a commit of a repository, in an
// organization with a token for the host.
func TestQueuedEnqueuesPending(t *testing.T) {
	ctx := context.Background()
	f := setup(t, "127.0.0.1")
	run := &domain.Execution{ID: domain.NewID(), OrganizationID: f.admin.OrgID, ProjectID: f.project.ID,
		Labels: map[string]string{"commit": "0123456789abcdef0123456789abcdef01234567"}}
	count := func() int {
		n := 0
		for _, m := range sqlitetest.Mails(t, f.st) {
			if m.Kind == "step:source-control" {
				n++
			}
		}
		return n
	}
	if err := f.svc.Queued(ctx, f.st, run); err != nil || count() != 0 {
		t.Fatalf("without a token: %v, %d deliveries", err, count())
	}
	gh := scmtest.NewGitHub(t, "ghp_good", "acme/shop")
	if _, err := f.svc.Save(ctx, f.admin, "github", scm.SaveInput{Token: "ghp_good", APIURL: gh.URL}); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.Queued(ctx, f.st, &domain.Execution{ID: domain.NewID(), OrganizationID: f.admin.OrgID, ProjectID: f.project.ID}); err != nil || count() != 0 {
		t.Fatalf("a run without a commit: %v, %d deliveries", err, count())
	}
	if err := f.svc.Queued(ctx, f.st, run); err != nil || count() != 1 {
		t.Fatalf("a run of a commit: %v, %d deliveries", err, count())
	}
	if err := f.svc.Queued(ctx, f.st, run); err != nil || count() != 1 {
		t.Fatalf("the same run again: %v, %d deliveries", err, count())
	}
}

// Deliveries are remembered for a bounded time: pruning removes the old ones, and a delivery ID
// pruned may be taken again.
func TestDeliveriesPruned(t *testing.T) {
	ctx := context.Background()
	f := setup(t)
	h, err := f.svc.CreateHook(ctx, f.dev, f.project.ID, scm.HookInput{Provider: "github"})
	if err != nil {
		t.Fatal(err)
	}
	sc := f.st.SourceControl()
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	if err := sc.RecordDelivery(ctx, h.ID, "old", t0); err != nil {
		t.Fatal(err)
	}
	if err := sc.RecordDelivery(ctx, h.ID, "new", t0.Add(8*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := sc.RecordDelivery(ctx, h.ID, "old", t0); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a delivery taken twice: %v", err)
	}
	if n, err := sc.PruneDeliveries(ctx, t0.Add(24*time.Hour)); err != nil || n != 1 {
		t.Fatalf("pruned %d, %v", n, err)
	}
	if err := sc.RecordDelivery(ctx, h.ID, "old", t0.Add(9*24*time.Hour)); err != nil {
		t.Fatalf("a pruned delivery ID: %v", err)
	}
}
