//go:build integration

package app_test

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/notify/notifytest"
	"verdict/internal/run"
	"verdict/internal/store"
	"verdict/internal/testenv"
	"verdict/internal/testenv/s3env"
)

// orgColumns names the columns that hold an organization's ID.
var orgColumns = []string{"organization_id", "org_id"}

// schemaTables reads every table of the database and, for each, its column holding an
// organization's ID ("" for none), from the schema's own catalog: a table a later migration
// adds is in it without this test naming it.
func schemaTables(t *testing.T, db *sql.DB, dialect string) map[string]string {
	t.Helper()
	q := `SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p WHERE m.type = 'table'`
	if dialect == "postgres" {
		q = `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema()`
	}
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	tables := map[string]string{}
	for rows.Next() {
		var table, column string
		if err := rows.Scan(&table, &column); err != nil {
			t.Fatal(err)
		}
		if _, ok := tables[table]; !ok {
			tables[table] = ""
		}
		if slices.Contains(orgColumns, column) {
			tables[table] = column
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(tables) < 20 {
		t.Fatalf("the catalog lists %d tables: %v", len(tables), tables)
	}
	return tables
}

// countRows runs a SELECT COUNT(*) with PostgreSQL's or SQLite's placeholders.
func countRows(t *testing.T, db *sql.DB, dialect, q string, args ...any) int {
	t.Helper()
	if dialect == "postgres" {
		for i := 1; strings.Contains(q, "?"); i++ {
			q = strings.Replace(q, "?", "$"+string(rune('0'+i)), 1)
		}
	}
	var n int
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// orgFootprint counts an organization's rows in every table of the schema: by its organization
// column, or, for the tables without one, through what the test knows of them (the IDs of the
// organization's runs and hooks, its members' addresses, read before it is erased). A table
// with neither fails the test: whoever adds one says here how it holds an organization's rows,
// and makes the eraser delete them.
func orgFootprint(t *testing.T, db *sql.DB, dialect, orgID string, known footprintKeys) map[string]int {
	t.Helper()
	in := func(col string, ids []string) (string, []any) {
		if len(ids) == 0 {
			return "1 = 0", nil
		}
		args := make([]any, len(ids))
		for i, id := range ids {
			args[i] = id
		}
		return col + " IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ") + ")", args
	}
	counts := map[string]int{}
	for table, col := range schemaTables(t, db, dialect) {
		switch {
		case col != "":
			counts[table] = countRows(t, db, dialect, `SELECT COUNT(*) FROM `+table+` WHERE `+col+` = ?`, orgID)
		case table == "organizations":
			counts[table] = countRows(t, db, dialect, `SELECT COUNT(*) FROM organizations WHERE id = ?`, orgID)
		case table == "execution_logs":
			where, args := in("execution_id", known.runIDs)
			counts[table] = countRows(t, db, dialect, `SELECT COUNT(*) FROM execution_logs WHERE `+where, args...)
		case table == "scm_hook_deliveries":
			where, args := in("hook_id", known.hookIDs)
			counts[table] = countRows(t, db, dialect, `SELECT COUNT(*) FROM scm_hook_deliveries WHERE `+where, args...)
		case table == "mail_outbox":
			n := 0
			for _, addr := range known.emails {
				n += countRows(t, db, dialect, `SELECT COUNT(*) FROM mail_outbox WHERE recipients LIKE ?`, `%"`+addr+`"%`)
			}
			counts[table] = n
		case table == "revoked_tokens", table == "goose_db_version", table == "sqlite_sequence":
			// Revoked session tokens are random IDs and expiries, nothing of an organization;
			// the rest is the database's own bookkeeping.
		default:
			t.Errorf("table %s has no organization column, and this test does not know how it holds an organization's rows: "+
				"say so in orgFootprint, and have the eraser (sqlstore's eraseTables) delete them", table)
		}
	}
	return counts
}

type footprintKeys struct {
	runIDs, hookIDs, emails []string
}

// openDB opens the harness's database on a connection of the test's own.
func openDB(t *testing.T, dialect, dataDir, url string) *sql.DB {
	t.Helper()
	driver, dsn := "sqlite", filepath.Join(dataDir, "verdict.db")+"?_pragma=busy_timeout(5000)"
	if dialect == "postgres" {
		driver, dsn = "pgx", url
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// unseeded are the tables of an organization's rows this test does not fill before erasing
// it, each with why; every other table must hold some of its rows, so that the erasure is seen
// to empty it.
var unseeded = map[string]string{
	"execution_tickets":   "tickets need a tracker's API (trackers_test.go)",
	"failure_occurrences": "needs a failed run analysed",
	"triages":             "needs a failed run analysed and triaged",
	"scm_hook_deliveries": "needs a signed delivery from a source-control host (scm_test.go)",
	"scm_comments":        "needs a source-control host's pull request (scm_test.go)",
	"integrations":        "needs a tracker's or host's API to check the key",
	"automation_plans":    "needs the planner's flag and test cases (planner_test.go)",
}

// TestOrganizationErasure: an admin erases the organization with its slug typed as
// confirmation, and the grace period at 0. Its run still going is cancelled first (the erasure
// waits for its runner to stop it); then its subscription is cancelled with the payment
// provider (the call seen going to stripe-mock), its report files (on disk, or in the bucket)
// deleted, and every row of it in every table of the schema (read from the catalog, so that a
// table added later is checked too) deleted. Its members' sessions and API keys answer 401, its
// report links 404. Another organization's rows, files, sessions and keys are untouched. On
// both databases, with reports on disk and in an S3 bucket (MinIO).
func TestOrganizationErasure(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres"} {
		for _, storage := range []string{"disk", "s3"} {
			t.Run(d+"/"+storage, func(t *testing.T) { testErasure(t, d, storage) })
		}
	}
}

func testErasure(t *testing.T, dialect, storage string) {
	dataDir := t.TempDir()
	rec := &providerRecorder{}
	env := billingEnv(t, rec)
	env["VERDICT_DATA_DIR"], env["VERDICT_RUNNER"], env["VERDICT_RUNNER_SECRET"] = dataDir, "none", runnerSecret
	env["VERDICT_ERASE_GRACE"], env["VERDICT_EGRESS_ALLOW"] = "0s", "127.0.0.1"
	var bucket *s3env.S3
	if storage == "s3" {
		bucket = s3env.Bucket(t)
		for k, v := range s3Env(bucket, dataDir) {
			env[k] = v
		}
	}
	var dbURL string
	if dialect == "postgres" {
		dbURL = testenv.PostgresDB(t)
	}
	h := newHarness(t, harnessOpts{dialect: dialect, databaseURL: dbURL, workers: true, retention: time.Hour, env: env,
		eraseInterval: 50 * time.Millisecond})
	db := openDB(t, dialect, dataDir, dbURL)
	ctx := context.Background()
	c := remoteClient(t, h, "eraser-runner")

	// Two organizations with the same kinds of data.
	type tenant struct {
		admin, dev account
		key        string
		a          auth
		runs       []keptRun
		link       string // a report link, swapped for a report token before the erasure
		keys       footprintKeys
	}
	hook := notifytest.Webhook(t, "", "whsec_test_0123456789abcdef")
	seed := func(name string) *tenant {
		tn := &tenant{}
		tn.admin = h.signup(name+"-admin@example.com", name+" Co")
		tn.dev = h.join(tn.admin, name+"-dev@example.com", "developer")
		tn.a = bearer(tn.admin.token)
		h.invite(tn.admin, name+"-invitee@example.com", "viewer")
		r := h.do("POST", "/api/auth/api-keys", bearer(tn.dev.token), map[string]any{"name": "ci"})
		expect(t, r, 201, "")
		tn.key = r.str("apiKey")
		p := h.do("POST", "/api/projects", tn.a, map[string]any{"name": "Web", "image": passImage,
			"envVars": []any{map[string]any{"key": "TOKEN", "value": "hush", "secret": true}}})
		expect(t, p, 201, "")
		project := p.str("project", "id")
		expect(t, h.do("POST", "/api/projects/"+project+"/schedules", tn.a,
			map[string]any{"name": "nightly", "cron": "0 3 * * *", "timezone": "UTC"}), 201, "")
		expect(t, h.do("POST", "/api/projects/"+project+"/notifications", tn.a, map[string]any{"kind": "webhook",
			"url": hook.URL + "/hook", "on": []string{"always"}, "secret": "whsec_test_0123456789abcdef"}), 201, "")
		hk := h.do("POST", "/api/projects/"+project+"/hooks", tn.a, map[string]any{"provider": "github"})
		expect(t, hk, 201, "")
		tn.keys.hookIDs = append(tn.keys.hookIDs, hk.str("data", "hook", "id"))
		expect(t, h.do("POST", "/api/test-cases", tn.a, map[string]any{"projectId": project, "title": "Sign in",
			"tags": []string{"smoke"}}), 201, "")
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(h.app.Store.SSO().Put(ctx, &domain.SSOConfig{OrganizationID: tn.admin.orgID, Issuer: "https://id.example.com",
			ClientID: "verdict", ClientSecretCipher: "sealed", Domains: []string{name + ".example.net"},
			DefaultRole: domain.RoleViewer, UpdatedAt: h.clock.Now()}))
		// A subscription with the payment provider.
		org, err := h.app.Store.Organizations().Get(ctx, tn.admin.orgID)
		must(err)
		sub := "sub_erase_" + name
		org.Billing.ProviderCustomerID, org.Billing.ProviderSubscriptionID = "cus_erase_"+name, &sub
		must(h.app.Store.Organizations().UpdatePlan(ctx, org.ID, domain.PlanTeam, org.Billing))
		body := event("evt_erase_"+name, "invoice.payment_succeeded", h.clock.Now(), invoiceObject("in_"+name, "cus_erase_"+name, 1900, h.clock.Now()))
		h.deliver(body)
		// Two finished runs, with logs, results and report files, one labelled.
		for _, task := range []string{name + "-run-1", name + "-run-2"} {
			tn.runs = append(tn.runs, settleRun(t, h, c, tn.a, task, map[string]any{"projectId": project}))
		}
		got, _ := h.reportAccess(tn.a, tn.runs[0].task)
		tn.link = got.link
		tn.keys.emails = append(tn.keys.emails, tn.admin.email, tn.dev.email, name+"-invitee@example.com")
		return tn
	}
	doomed, kept := seed("doomed"), seed("kept")
	for _, tn := range []*tenant{doomed, kept} {
		expect(t, h.do("POST", "/api/executions", apiKey(tn.key), map[string]any{"image": passImage,
			"taskId": strings.TrimSuffix(tn.admin.email, "-admin@example.com") + "-labelled",
			"labels": map[string]string{"branch": "main"}}), 201, "")
	}
	// The runner takes the doomed organization's labelled run, and holds it.
	w, err := c.Next(ctx, time.Minute)
	if err != nil || w == nil || w.TaskID != "doomed-labelled" {
		// The kept organization's run may come first: take it to its end, then the doomed one's.
		if err == nil && w != nil && w.TaskID == "kept-labelled" {
			if err := c.Done(ctx, w.ID, run.Result{Status: domain.ExecPassed, ExitCode: new(int), FinishedAt: h.clock.Now()}); err != nil {
				t.Fatal(err)
			}
			w, err = c.Next(ctx, time.Minute)
		}
		if err != nil || w == nil || w.TaskID != "doomed-labelled" {
			t.Fatalf("claim: %+v %v", w, err)
		}
	}
	if err := c.Log(ctx, w.ID, 1, 0, "still going\n"); err != nil {
		t.Fatal(err)
	}
	for _, tn := range []*tenant{doomed, kept} {
		runs, _, err := h.app.Store.Executions().List(ctx, tn.admin.orgID, store.ExecutionFilter{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range runs {
			tn.keys.runIDs = append(tn.keys.runIDs, e.ID)
		}
	}
	if bucket != nil && len(bucket.Keys(t, doomed.admin.orgID+"/")) == 0 {
		t.Fatal("no report object in the bucket before the erasure")
	}
	reportDir := filepath.Join(dataDir, "reports", doomed.admin.orgID)
	if bucket == nil {
		if _, err := os.Stat(reportDir); err != nil {
			t.Fatalf("no report folder before the erasure: %v", err)
		}
	}

	before := orgFootprint(t, db, dialect, doomed.admin.orgID, doomed.keys)
	keptBefore := orgFootprint(t, db, dialect, kept.admin.orgID, kept.keys)
	for table, n := range before {
		if _, ok := unseeded[table]; n == 0 && !ok {
			t.Errorf("the test left table %s without a row of the organization: seed it, or say why in unseeded", table)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// Confirmation: the slug, typed exactly; admins only.
	slug := h.do("GET", "/api/organization", doomed.a, nil).str("organization", "slug")
	expect(t, h.do("DELETE", "/api/organization", doomed.a, map[string]any{}), 400, "Invalid confirmation")
	expect(t, h.do("DELETE", "/api/organization", doomed.a, map[string]any{"confirm": strings.ToUpper(slug)}), 400, "Invalid confirmation")
	expect(t, h.do("DELETE", "/api/organization", doomed.a, map[string]any{"confirm": slug, "now": true}), 400, "Invalid request")
	expect(t, h.do("DELETE", "/api/organization", bearer(doomed.dev.token), map[string]any{"confirm": slug}), 403, "Forbidden")
	r := h.do("DELETE", "/api/organization", doomed.a, map[string]any{"confirm": slug})
	expect(t, r, 202, "")
	if r.str("data", "eraseAt") == "" || r.str("data", "organizationId") != doomed.admin.orgID {
		t.Fatalf("erase: %s", r.raw)
	}

	// The running run is asked to stop; nothing is erased while it goes.
	var cancelled bool
	for deadline := time.Now().Add(15 * time.Second); !cancelled; time.Sleep(20 * time.Millisecond) {
		if cancelled, err = c.Extend(ctx, w.ID, time.Minute); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the running run was never asked to stop")
		}
	}
	time.Sleep(200 * time.Millisecond) // a few passes of the erase job
	expect(t, h.do("GET", "/api/executions/"+doomed.runs[0].task, apiKey(doomed.key), nil), 200, "")
	if n := len(rec.requests("/v1/subscriptions/sub_erase_doomed")); n != 0 {
		t.Fatalf("the subscription was cancelled before the run stopped (%d calls)", n)
	}
	if err := c.Done(ctx, w.ID, run.Result{Status: domain.ExecCancelled, ExitCode: new(int), FinishedAt: h.clock.Now()}); err != nil {
		t.Fatal(err)
	}

	// Then everything goes.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if countRows(t, db, dialect, `SELECT COUNT(*) FROM organizations WHERE id = ?`, doomed.admin.orgID) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the organization was not erased")
		}
	}
	after := orgFootprint(t, db, dialect, doomed.admin.orgID, doomed.keys)
	for table, n := range after {
		if n != 0 {
			t.Errorf("table %s still holds %d rows of the erased organization (%d before)", table, n, before[table])
		}
	}
	if keptAfter := orgFootprint(t, db, dialect, kept.admin.orgID, kept.keys); !mapsEqual(keptAfter, keptBefore) {
		t.Errorf("the other organization's rows changed:\nbefore %v\nafter  %v", keptBefore, keptAfter)
	}
	if got := rec.requests("/v1/subscriptions/sub_erase_doomed"); len(got) != 1 {
		t.Errorf("calls to cancel the subscription: %d, want 1", len(got))
	}
	if got := rec.requests("/v1/subscriptions/sub_erase_kept"); len(got) != 0 {
		t.Errorf("the other organization's subscription was cancelled")
	}
	if bucket != nil {
		if keys := bucket.Keys(t, doomed.admin.orgID+"/"); len(keys) != 0 {
			t.Errorf("objects left in the bucket: %v", keys)
		}
		if len(bucket.Keys(t, kept.admin.orgID+"/")) == 0 {
			t.Error("the other organization's report objects are gone")
		}
	} else {
		if _, err := os.Stat(reportDir); !os.IsNotExist(err) {
			t.Errorf("the report folder is still there: %v", err)
		}
		if _, err := os.Stat(filepath.Join(dataDir, "reports", kept.admin.orgID)); err != nil {
			t.Errorf("the other organization's report folder: %v", err)
		}
	}
	// Nothing of it answers: sessions and keys 401, report links 404.
	for _, cred := range []auth{doomed.a, bearer(doomed.dev.token), apiKey(doomed.key)} {
		if got := h.do("GET", "/api/organization", cred, nil); got.status != http.StatusUnauthorized {
			t.Errorf("a credential of the erased organization: %d %s", got.status, got.raw)
		}
	}
	if res, _ := fetch(t, noFollow, h.srv.URL, doomed.link); res.StatusCode != http.StatusNotFound {
		t.Errorf("report link of the erased organization: %d", res.StatusCode)
	}
	if res, _ := fetch(t, noFollow, h.srv.URL, doomed.runs[1].htmlURL); res.StatusCode != http.StatusNotFound {
		t.Errorf("report of the erased organization: %d", res.StatusCode)
	}
	expect(t, h.do("POST", "/api/auth/login", anon, map[string]any{"email": doomed.admin.email, "password": password}), 401, "Invalid credentials")
	// The other organization answers as before.
	expect(t, h.do("GET", "/api/executions/"+kept.runs[0].task, apiKey(kept.key), nil), 200, "")
	expect(t, h.do("GET", "/api/organization", kept.a, nil), 200, "")
	if res, _ := fetch(t, noFollow, h.srv.URL, kept.link); res.StatusCode != http.StatusOK {
		t.Errorf("the other organization's report link: %d", res.StatusCode)
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestOrganizationErasureGrace: with the default 7-day grace period, an erasure is scheduled,
// shown (eraseAt in the organization, a banner on every member's dashboard page), refuses new
// runs with a clear 403, and its admins can cancel it (developers cannot; a second request or
// cancel is a 409); scheduled again, nothing is erased before its time, and everything is at
// the erase job's first pass after it.
func TestOrganizationErasureGrace(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			h := newHarness(t, harnessOpts{dialect: d, workers: true, retention: time.Hour, eraseInterval: 50 * time.Millisecond,
				env: map[string]string{"VERDICT_RUNNER": "none"}})
			b := h.signUpBrowser(t, "grace-admin@example.com", "Grace Co")
			admin := account{token: b.session(), email: "grace-admin@example.com"}
			a := bearer(admin.token)
			dev := h.join(admin, "grace-dev@example.com", "developer")
			devPage := h.withSession(t, dev.token)
			slug := h.do("GET", "/api/organization", a, nil).str("organization", "slug")
			if p := devPage.get("/runs"); strings.Contains(p.body, "scheduled for erasure") {
				t.Fatalf("a banner before any erasure: %s", p.body)
			}

			t0 := h.clock.Now()
			r := h.do("DELETE", "/api/organization", a, map[string]any{"confirm": slug})
			expect(t, r, 202, "")
			if want := t0.Add(7 * 24 * time.Hour).UTC().Format("2006-01-02T15:04:05.000Z07:00"); r.str("data", "eraseAt") != want {
				t.Fatalf("eraseAt %s, want %s", r.str("data", "eraseAt"), want)
			}
			if got := h.do("GET", "/api/organization", bearer(dev.token), nil); got.str("organization", "eraseAt") != r.str("data", "eraseAt") {
				t.Fatalf("the organization does not show its erasure: %s", got.raw)
			}
			expect(t, h.do("DELETE", "/api/organization", a, map[string]any{"confirm": slug}), 409, "Erasure already scheduled")
			expect(t, h.do("POST", "/api/executions", bearer(dev.token), map[string]any{"image": passImage}), 403,
				"Organization scheduled for erasure")
			for _, path := range []string{"/runs", "/settings"} {
				if p := devPage.get(path); !strings.Contains(p.body, "scheduled for erasure at") {
					t.Fatalf("no banner on %s: %s", path, p.body)
				}
			}
			expect(t, h.do("POST", "/api/organization/erase/cancel", bearer(dev.token), nil), 403, "Forbidden")

			// Cancelled through the dashboard's form; the banner goes, runs queue again.
			b.get("/settings")
			b.follow("cancel", b.post("/settings/erase/cancel", nil), 200, "The organization&#39;s erasure is cancelled.")
			expect(t, h.do("POST", "/api/organization/erase/cancel", a, nil), 409, "No erasure scheduled")
			if p := devPage.get("/runs"); strings.Contains(p.body, "scheduled for erasure") {
				t.Fatalf("the banner stayed after the cancel: %s", p.body)
			}
			expect(t, h.do("POST", "/api/executions", bearer(dev.token), map[string]any{"image": passImage}), 201, "")

			// Scheduled again through the dashboard's form (the slug typed); kept to its time.
			b.get("/settings")
			b.follow("wrong slug", b.post("/settings/erase", url.Values{"confirm": {"grace"}}), 200, "Invalid confirmation")
			b.get("/settings")
			b.follow("erase", b.post("/settings/erase", url.Values{"confirm": {slug}}), 200, "will be erased at")
			key := h.do("POST", "/api/auth/api-keys", a, map[string]any{"name": "late"})
			expect(t, key, 201, "")
			h.clock.Advance(7*24*time.Hour - time.Minute)
			fresh := bearer(h.login(admin.email)) // sessions last a day: one opened just before the end
			time.Sleep(300 * time.Millisecond)    // passes of the erase job
			expect(t, h.do("GET", "/api/organization", fresh, nil), 200, "")
			h.clock.Advance(2 * time.Minute)
			for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				if _, err := h.app.Store.Organizations().Get(context.Background(), dev.orgID); errors.Is(err, store.ErrNotFound) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the organization was not erased at the end of its grace period")
				}
			}
			for _, cred := range []auth{fresh, apiKey(key.str("apiKey"))} {
				if got := h.do("GET", "/api/organization", cred, nil); got.status != http.StatusUnauthorized {
					t.Fatalf("a credential of the erased organization: %d %s", got.status, got.raw)
				}
			}
		})
	}
}
