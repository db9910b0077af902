package control

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"verdict/internal/crypto/secretbox"
	"verdict/internal/domain"
	"verdict/internal/report"
	"verdict/internal/run"
	"verdict/internal/store/sqlstore"
	"verdict/internal/testenv"
)

// openStores opens a migrated SQLite store and a report store in a folder of the test's.
func openStores(t *testing.T) (*sqlstore.Store, *report.FSStore) {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlstore.Open(context.Background(), "", dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	reports, err := report.NewFSStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st, reports
}

// sealedOrg opens the stores, a secret box, an enterprise organization, and the variables
// TOKEN=s3cret (a secret) sealed in the box.
func sealedOrg(t *testing.T) (*sqlstore.Store, *report.FSStore, *secretbox.Box, *domain.Organization, string) {
	t.Helper()
	st, reports := openStores(t)
	box, err := secretbox.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	org := &domain.Organization{ID: domain.NewID(), Name: "Org", Slug: "org", Plan: domain.PlanEnterprise, CreatedAt: time.Now()}
	if err := st.Organizations().Create(context.Background(), org); err != nil {
		t.Fatal(err)
	}
	sealed, err := SealEnv(box, run.RunEnv{Vars: map[string]string{"TOKEN": "s3cret"}, Secrets: []string{"TOKEN"}})
	if err != nil {
		t.Fatal(err)
	}
	return st, reports, box, org, sealed
}

// The in-process Peer as a runner meets it: Next hands out a run with its variables unsealed
// (one whose variables cannot be unsealed is ended ERROR instead), Upload keeps the report
// folders of one archive and reads their tests with secrets masked, Done settles the run, and
// after it the run is no longer this runner's.
func TestPeerHandsOutAndSettlesRuns(t *testing.T) {
	ctx := context.Background()
	st, reports, box, org, sealed := sealedOrg(t)
	queue := func(task, cipher string, age time.Duration) {
		t.Helper()
		e := &domain.Execution{ID: domain.NewID(), OrganizationID: org.ID, TaskID: task, Image: "suite:pass", Folder: "all",
			TimeoutSeconds: 60, Status: domain.ExecPending, EnvCipher: cipher, QueuedAt: time.Now().Add(-age)}
		if err := st.Executions().Create(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	queue("sealed-badly", "not a cipher", 2*time.Hour)
	queue("good", sealed, time.Hour)

	plane := &Plane{Store: st, Reports: reports, ReportDir: reports.LocalDir, Box: box, Events: noEvents{},
		Clock: domain.SystemClock, Log: slog.New(slog.DiscardHandler)}
	peer := plane.Peer("r1")
	w, err := peer.Next(ctx, time.Minute)
	if err != nil || w == nil || w.TaskID != "good" || w.Env.Vars["TOKEN"] != "s3cret" {
		t.Fatalf("Next: %+v, %v", w, err)
	}
	bad, err := st.Executions().Get(ctx, org.ID, "sealed-badly")
	if err != nil || bad.Status != domain.ExecError || bad.Error != "the run's variables could not be decrypted" {
		t.Fatalf("the run with unreadable variables: %+v, %v", bad, err)
	}
	if again, err := peer.Next(ctx, time.Minute); again != nil || err != nil {
		t.Fatalf("second Next: %+v, %v", again, err)
	}

	if cancelled, err := peer.Extend(ctx, w.ID, time.Minute); cancelled || err != nil {
		t.Fatalf("Extend: %v, %v", cancelled, err)
	}
	if err := peer.Log(ctx, w.ID, 1, 0, "hello\n"); err != nil {
		t.Fatal(err)
	}
	archive := testenv.Tar(t,
		testenv.TarEntry{Name: "junit/"},
		testenv.TarEntry{Name: "junit/r.xml", Body: `<testsuite name="s"><testcase classname="c" name="uses s3cret"/></testsuite>`},
		testenv.TarEntry{Name: "node_modules/x.js", Body: "x"},
	)
	rep, err := peer.Upload(ctx, w.ID, bytes.NewReader(archive))
	// The suite wrote results and no HTML report: Verdict's results report is kept beside them,
	// as its index, with the secret masked as in the results.
	if err != nil || !slices.Equal(rep.Dirs, []string{"junit", report.ResultsFolder}) ||
		!slices.Equal(rep.Indexes, []string{report.ResultsFolder}) || rep.Bytes == 0 || len(rep.Tests) != 1 ||
		rep.Tests[0].Name != "uses "+run.Mask {
		t.Fatalf("Upload: %+v, %v", rep, err)
	}
	rc, _, err := reports.Open(ctx, w.OrganizationID, w.TaskID, report.ResultsFolder+"/index.html")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Contains(page, []byte("uses "+run.Mask)) || bytes.Contains(page, []byte("s3cret")) {
		t.Fatalf("results report: %s", page)
	}
	exit := 0
	if err := peer.Done(ctx, w.ID, run.Result{Status: domain.ExecPassed, ExitCode: &exit, FinishedAt: time.Now(), Reports: rep}); err != nil {
		t.Fatal(err)
	}
	e, err := st.Executions().Get(ctx, org.ID, "good")
	if err != nil || e.Status != domain.ExecPassed || len(e.ReportDirs) != 2 || e.Summary.Total != 1 {
		t.Fatalf("settled run: %+v, %v", e, err)
	}
	if got, err := st.Organizations().Get(ctx, org.ID); err != nil || got.StorageUsedBytes != rep.Bytes {
		t.Fatalf("storage counted: %+v, %v", got, err)
	}
	if _, err := peer.Extend(ctx, w.ID, time.Minute); !errors.Is(err, run.ErrLeaseLost) {
		t.Fatalf("Extend after Done: %v, want ErrLeaseLost", err)
	}
	if err := plane.Peer("r2").Log(ctx, w.ID, 2, 6, "late\n"); !errors.Is(err, run.ErrLeaseLost) {
		t.Fatalf("another runner's Log: %v, want ErrLeaseLost", err)
	}
}

// A remote runner's ask repeated after its answer was lost reaches, maybe, another replica
// (the one that answered died): with the claim kept beside the run, that replica hands out the
// same run, variables unsealed, and its door then carries the runner's calls about it. Another
// process of the runner, or another ask, gets none; nor does the ask once the run has ended.
func TestRepeatedClaimOnAnotherReplica(t *testing.T) {
	ctx := context.Background()
	st, reports, box, org, sealed := sealedOrg(t)
	for _, task := range []string{"first", "second"} {
		e := &domain.Execution{ID: domain.NewID(), OrganizationID: org.ID, TaskID: task, Image: "suite:pass", Folder: "all",
			TimeoutSeconds: 60, Status: domain.ExecPending, EnvCipher: sealed, QueuedAt: time.Now()}
		if err := st.Executions().Create(ctx, e); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond) // queued in order
	}
	replica := func() *Plane {
		return &Plane{Store: st, Reports: reports, ReportDir: reports.LocalDir, Box: box, Events: noEvents{},
			Clock: domain.SystemClock, Log: slog.New(slog.DiscardHandler)}
	}
	w, err := replica().InstancePeer("remote:box", "aaaa").NextClaim(ctx, time.Minute, "c1a1")
	if err != nil || w == nil || w.TaskID != "first" {
		t.Fatalf("the first ask: %+v, %v", w, err)
	}
	other := replica()
	door := other.InstancePeer("remote:box", "aaaa")
	again, err := door.Claimed(ctx, "c1a1")
	if err != nil || again == nil || again.ID != w.ID || again.Env.Vars["TOKEN"] != "s3cret" {
		t.Fatalf("the ask repeated on another replica: %+v, %v; want %s", again, err, w.ID)
	}
	if err := door.Log(ctx, w.ID, 1, 0, "hello\n"); err != nil {
		t.Fatalf("a log through the door that repeated the claim: %v", err)
	}
	bbbb := other.InstancePeer("remote:box", "bbbb")
	if w, err := bbbb.Claimed(ctx, "c1a1"); w != nil || err != nil {
		t.Fatalf("another process repeating the same claim: %+v, %v; want none", w, err)
	}
	if w, err := bbbb.NextClaim(ctx, time.Minute, "c1a1"); err != nil || w == nil || w.TaskID != "second" {
		t.Fatalf("another process with the same claim: %+v, %v; want a run of its own", w, err)
	}
	if err := door.Done(ctx, w.ID, run.Result{Status: domain.ExecPassed}); err != nil {
		t.Fatal(err)
	}
	if w, err := replica().InstancePeer("remote:box", "aaaa").Claimed(ctx, "c1a1"); w != nil || err != nil {
		t.Fatalf("the ask repeated after its run ended: %+v, %v; want none", w, err)
	}
}
