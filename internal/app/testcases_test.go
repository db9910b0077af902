//go:build integration

package app_test

import (
	"fmt"
	"strings"
	"testing"
)

// testCaseList lists a project's test cases (with a query of filters) and returns their
// titles and the total.
func (h *harness) testCaseList(a auth, projectID, query string) ([]string, float64) {
	h.t.Helper()
	r := h.do("GET", "/api/test-cases?projectId="+projectID+query, a, nil)
	expect(h.t, r, 200, "")
	var titles []string
	for _, c := range r.get("data", "testCases").([]any) {
		titles = append(titles, c.(map[string]any)["title"].(string))
	}
	total, _ := r.get("data", "total").(float64)
	return titles, total
}

func (h *harness) project(a account, name string) string {
	h.t.Helper()
	r := h.do("POST", "/api/projects", bearer(a.token), map[string]any{"name": name, "image": "registry.example.com/suite:1"})
	expect(h.t, r, 201, "")
	return r.str("project", "id")
}

func importCSV(h *harness, a auth, projectID, file string) resp {
	h.t.Helper()
	return h.do("POST", "/api/test-cases/import?projectId="+projectID, a, file, "Content-Type", "text/csv")
}

const viewerRefusal = "Viewers cannot create, change, import or delete test cases"

// TestTestCasesCRUD: a project's test cases through the API, as each role and from another
// organization.
func TestTestCasesCRUD(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		admin := h.signup("ann@example.com", "Acme QA")
		dev := h.join(admin, "dev@example.com", "developer")
		viewer := h.join(admin, "vic@example.com", "viewer")
		project := h.project(admin, "Web shop")

		// Create, with every field; the answer is the stored test case.
		body := map[string]any{"projectId": project, "title": "  Pay with a saved card ", "suite": "Checkout",
			"tags": []string{"smoke", "payments", "smoke", " "}, "priority": "high", "preconditions": "A saved card\r\nOne item",
			"steps": []map[string]string{{"action": "Open the cart", "expected": "The item is listed"}, {"action": "Pay"}}}
		r := h.do("POST", "/api/test-cases", bearer(dev.token), body)
		expect(t, r, 201, "")
		id := r.str("testCase", "id")
		created := r.get("testCase").(map[string]any)
		want := fmt.Sprint(map[string]any{"id": id, "projectId": project, "title": "Pay with a saved card", "suite": "Checkout",
			"tags": []any{"smoke", "payments"}, "priority": "high", "preconditions": "A saved card\nOne item",
			"steps":     []any{map[string]any{"action": "Open the cart", "expected": "The item is listed"}, map[string]any{"action": "Pay", "expected": ""}},
			"createdBy": dev.id, "createdAt": "2026-03-10T09:00:00.000Z", "updatedAt": "2026-03-10T09:00:00.000Z"})
		if got := fmt.Sprint(created); got != want {
			t.Fatalf("created:\n got  %s\n want %s", got, want)
		}
		r = h.do("GET", "/api/test-cases/"+id, bearer(viewer.token), nil)
		expect(t, r, 200, "")
		if got := fmt.Sprint(r.get("testCase")); got != want {
			t.Fatalf("read back:\n got  %s\n want %s", got, want)
		}

		// The same suite and title again; bad fields; the strict body.
		expect(t, h.do("POST", "/api/test-cases", bearer(admin.token), map[string]any{"projectId": project, "title": "Pay with a saved card", "suite": "Checkout"}), 409, "Test case already exists")
		expect(t, h.do("POST", "/api/test-cases", bearer(admin.token), map[string]any{"projectId": project, "title": "Pay with a saved card"}), 201, "")
		for _, c := range []struct {
			body    map[string]any
			errText string
			message string
		}{
			{map[string]any{"title": "x"}, "Missing required fields", "projectId is required"},
			{map[string]any{"projectId": project}, "Missing required fields", "title is required"},
			{map[string]any{"projectId": project, "title": strings.Repeat("t", 301)}, "Validation error", "title must be at most 300 characters"},
			{map[string]any{"projectId": project, "title": "t", "priority": "urgent"}, "Validation error", "priority must be critical, high, medium or low"},
			{map[string]any{"projectId": project, "title": "t", "tags": []string{"a,b"}}, "Validation error", `tag "a,b" must not contain a comma`},
			{map[string]any{"projectId": project, "title": "t", "steps": []map[string]string{{"action": ""}}}, "Validation error", "step 1 is empty: give an action or an expected result"},
			{map[string]any{"projectId": project, "title": "t", "steps": []map[string]string{{"action": "a", "expectedResult": "b"}}}, "Invalid request", `Unknown field "steps[0].expectedResult"`},
		} {
			r := h.do("POST", "/api/test-cases", bearer(admin.token), c.body)
			expect(t, r, 400, c.errText)
			if r.str("message") != c.message {
				t.Errorf("%v: message %q, want %q", c.body, r.str("message"), c.message)
			}
		}

		// Update: fields sent change, the rest stay; an empty priority removes it.
		r = h.do("PATCH", "/api/test-cases/"+id, bearer(dev.token), map[string]any{"priority": "", "tags": []string{"regression"}})
		expect(t, r, 200, "")
		if r.get("testCase", "priority") != nil || fmt.Sprint(r.get("testCase", "tags")) != "[regression]" ||
			r.str("testCase", "suite") != "Checkout" || len(r.get("testCase", "steps").([]any)) != 2 {
			t.Fatalf("after PATCH: %s", r.raw)
		}
		expect(t, h.do("PATCH", "/api/test-cases/"+id, bearer(dev.token), map[string]any{"suite": ""}), 409, "Test case already exists")
		expect(t, h.do("PATCH", "/api/test-cases/"+id, bearer(dev.token), map[string]any{"projectId": project}), 400, "Invalid request")

		// List: filters, paging, and the key of CI.
		for i, s := range []string{"Cart", "Cart", "Account"} {
			expect(t, h.do("POST", "/api/test-cases", bearer(admin.token), map[string]any{"projectId": project,
				"title": fmt.Sprintf("Case %d", i), "suite": s, "tags": []string{"smoke"}}), 201, "")
		}
		titles, total := h.testCaseList(bearer(viewer.token), project, "")
		if fmt.Sprint(titles) != "[Pay with a saved card Case 2 Case 0 Case 1 Pay with a saved card]" || total != 5 {
			t.Fatalf("list: %v (%v)", titles, total)
		}
		if titles, total = h.testCaseList(bearer(viewer.token), project, "&suite=Cart"); fmt.Sprint(titles) != "[Case 0 Case 1]" || total != 2 {
			t.Fatalf("suite Cart: %v (%v)", titles, total)
		}
		if titles, total = h.testCaseList(bearer(viewer.token), project, "&tag=smoke&limit=2&offset=1"); fmt.Sprint(titles) != "[Case 0 Case 1]" || total != 3 {
			t.Fatalf("tag smoke, second page: %v (%v)", titles, total)
		}
		r = h.do("POST", "/api/auth/api-keys", bearer(admin.token), map[string]any{"name": "ci"})
		expect(t, r, 201, "")
		if titles, _ = h.testCaseList(apiKey(r.str("apiKey")), project, "&tag=regression"); fmt.Sprint(titles) != "[Pay with a saved card]" {
			t.Fatalf("with the API key, tag regression: %v", titles)
		}
		expect(t, h.do("GET", "/api/test-cases", bearer(viewer.token), nil), 400, "Missing required fields")
		expect(t, h.do("GET", "/api/test-cases?projectId="+project+"&limit=500", bearer(viewer.token), nil), 400, "Validation error")

		// A viewer reads but changes nothing.
		expect(t, h.do("POST", "/api/test-cases", bearer(viewer.token), map[string]any{"projectId": project, "title": "v"}), 403, "Forbidden")
		r = h.do("PATCH", "/api/test-cases/"+id, bearer(viewer.token), map[string]any{"title": "v"})
		expect(t, r, 403, "Forbidden")
		if r.str("message") != viewerRefusal {
			t.Errorf("viewer's refusal: %q", r.str("message"))
		}
		expect(t, h.do("DELETE", "/api/test-cases/"+id, bearer(viewer.token), nil), 403, "Forbidden")
		expect(t, importCSV(h, bearer(viewer.token), project, "Title\nv\n"), 403, "Forbidden")

		// Another organization sees none of it.
		other := h.signup("olga@example.com", "Other Co")
		expect(t, h.do("GET", "/api/test-cases/"+id, bearer(other.token), nil), 404, "Test case not found")
		expect(t, h.do("PATCH", "/api/test-cases/"+id, bearer(other.token), map[string]any{"title": "mine"}), 404, "Test case not found")
		expect(t, h.do("DELETE", "/api/test-cases/"+id, bearer(other.token), nil), 404, "Test case not found")
		expect(t, h.do("GET", "/api/test-cases?projectId="+project, bearer(other.token), nil), 404, "Project not found")
		expect(t, h.do("POST", "/api/test-cases", bearer(other.token), map[string]any{"projectId": project, "title": "mine"}), 404, "Project not found")
		expect(t, importCSV(h, bearer(other.token), project, "Title\nmine\n"), 404, "Project not found")
		if _, total = h.testCaseList(bearer(admin.token), project, ""); total != 5 {
			t.Fatalf("after the other organization's attempts: %v test cases", total)
		}

		// Delete one; deleting the project deletes the rest.
		expect(t, h.do("DELETE", "/api/test-cases/"+id, bearer(dev.token), nil), 200, "")
		expect(t, h.do("GET", "/api/test-cases/"+id, bearer(dev.token), nil), 404, "Test case not found")
		expect(t, h.do("DELETE", "/api/test-cases/"+id, bearer(dev.token), nil), 404, "Test case not found")
		r = h.do("GET", "/api/test-cases?projectId="+project+"&limit=1", bearer(dev.token), nil)
		expect(t, r, 200, "")
		left := r.get("data", "testCases").([]any)[0].(map[string]any)["id"].(string)
		expect(t, h.do("DELETE", "/api/projects/"+project, bearer(admin.token), nil), 200, "")
		expect(t, h.do("GET", "/api/test-cases/"+left, bearer(dev.token), nil), 404, "Test case not found")
	})
}

// importFile has three good records (one of two lines, one continued by a step row) and three
// bad ones.
const importFile = `ID,Title,Section,Priority,Preconditions,Steps,Expected Result,Tags,Steps (Step),Steps (Expected Result)
C1,Pay with a saved card,Checkout,High,A saved card,"Open the cart
Pay","The cart lists the item
The confirmation opens","smoke,payments",,
C2,,Checkout,Low,,,,,,
C3,Log out,Account,4 - Must Test,,,,auth,Click Log out,The login page opens
,,,,,,,,Log in again,The dashboard opens
C4,Rename,Account,urgent,,,,,,
C5,Pay with a saved card,Checkout,,,,,,,
C6,Search,,medium,,Type a word,,"search, smoke",,
`

// TestTestCaseImport: a CSV file with good and bad records, imported twice, then changed; and
// files that store nothing.
func TestTestCaseImport(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		admin := h.signup("ann@example.com", "Acme QA")
		project := h.project(admin, "Web shop")
		a := bearer(admin.token)

		r := importCSV(h, a, project, importFile)
		expect(t, r, 200, "")
		const skipped = `[map[line:5 reason:title is required] map[line:8 reason:priority "urgent" is not critical, high, medium or low (or 1 to 4)] map[line:9 reason:it repeats the test case of line 2 (same suite and title)]]`
		if r.get("data", "imported") != float64(3) || r.get("data", "updated") != float64(0) || fmt.Sprint(r.get("data", "skipped")) != skipped {
			t.Fatalf("first import: %s", r.raw)
		}
		titles, total := h.testCaseList(a, project, "")
		if fmt.Sprint(titles) != "[Search Log out Pay with a saved card]" || total != 3 {
			t.Fatalf("after the import: %v (%v)", titles, total)
		}
		r = h.do("GET", "/api/test-cases?projectId="+project+"&suite=Account", a, nil)
		logout := r.get("data", "testCases").([]any)[0].(map[string]any)
		if fmt.Sprint(logout["steps"]) != "[map[action:Click Log out expected:The login page opens] map[action:Log in again expected:The dashboard opens]]" ||
			logout["priority"] != "critical" || fmt.Sprint(logout["tags"]) != "[auth]" || logout["createdBy"] != admin.id {
			t.Fatalf("Log out: %v", logout)
		}
		r = h.do("GET", "/api/test-cases?projectId="+project+"&tag=payments", a, nil)
		pay := r.get("data", "testCases").([]any)[0].(map[string]any)
		if fmt.Sprint(pay["steps"]) != "[map[action:Open the cart expected:The cart lists the item] map[action:Pay expected:The confirmation opens]]" ||
			pay["priority"] != "high" || pay["preconditions"] != "A saved card" {
			t.Fatalf("Pay with a saved card: %v", pay)
		}

		// The same file again adds nothing; a changed file updates in place.
		r = importCSV(h, a, project, importFile)
		expect(t, r, 200, "")
		if r.get("data", "imported") != float64(0) || r.get("data", "updated") != float64(3) || fmt.Sprint(r.get("data", "skipped")) != skipped {
			t.Fatalf("second import: %s", r.raw)
		}
		if _, total = h.testCaseList(a, project, ""); total != 3 {
			t.Fatalf("after importing twice: %v test cases", total)
		}
		r = importCSV(h, a, project, "title;section;priority;tags\r\nLog out;Account;low;auth,nightly\r\nNew one;Account;;\r\n")
		expect(t, r, 200, "")
		if r.get("data", "imported") != float64(1) || r.get("data", "updated") != float64(1) || fmt.Sprint(r.get("data", "skipped")) != "[]" {
			t.Fatalf("changed file: %s", r.raw)
		}
		r = h.do("GET", "/api/test-cases/"+logout["id"].(string), a, nil)
		if r.str("testCase", "priority") != "low" || fmt.Sprint(r.get("testCase", "tags")) != "[auth nightly]" ||
			len(r.get("testCase", "steps").([]any)) != 0 || r.str("testCase", "createdAt") != logout["createdAt"] {
			t.Fatalf("Log out after the changed file: %s", r.raw)
		}

		// Files that store nothing.
		for _, c := range []struct {
			name, contentType, file, errText string
		}{
			{"an unterminated quote after a good record", "text/csv", "Title,Steps\nFine,x\nBroken,\"open\n", "Invalid CSV"},
			{"no Title column", "text/csv", "Name,Steps\nx,y\n", "Invalid CSV"},
			{"empty", "text/csv", "", "Invalid CSV"},
			{"a header only", "text/csv", "Title,Steps\n", "Invalid CSV"},
			{"JSON", "application/json", `{"title":"x"}`, "Invalid content type"},
			{"not UTF-8", "text/csv", "Title\nCaf\xe9\n", "Invalid CSV"},
		} {
			r := h.do("POST", "/api/test-cases/import?projectId="+project, a, c.file, "Content-Type", c.contentType)
			expect(t, r, 400, c.errText)
			if _, total := h.testCaseList(a, project, ""); total != 4 {
				t.Fatalf("%s: %v test cases after the refused file", c.name, total)
			}
		}
		expect(t, h.do("POST", "/api/test-cases/import", a, "Title\nx\n", "Content-Type", "text/csv"), 400, "Missing required fields")
	})
}

// TestTestCaseImportBounds: 5000 rows are imported, 5001 refused whole, and a file over 10 MiB
// too.
func TestTestCaseImportBounds(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		admin := h.signup("ann@example.com", "Acme QA")
		project := h.project(admin, "Web shop")
		a := bearer(admin.token)
		file := func(rows int) string {
			var b strings.Builder
			b.WriteString("Title,Section,Tags,Steps,Expected Result\n")
			for i := range rows {
				fmt.Fprintf(&b, "Case %d,Suite %d,\"t%d,all\",\"Step one\nStep two\",\"Seen\nDone\"\n", i, i%10, i%5)
			}
			return b.String()
		}
		r := importCSV(h, a, project, file(5001))
		expect(t, r, 400, "Too many rows")
		if _, total := h.testCaseList(a, project, ""); total != 0 {
			t.Fatalf("5001 rows stored %v test cases", total)
		}
		r = importCSV(h, a, project, file(5000))
		expect(t, r, 200, "")
		if r.get("data", "imported") != float64(5000) || fmt.Sprint(r.get("data", "skipped")) != "[]" {
			t.Fatalf("5000 rows: %s", r.raw[:min(len(r.raw), 500)])
		}
		if _, total := h.testCaseList(a, project, "&tag=t3"); total != 1000 {
			t.Fatalf("tag t3: %v of 5000", total)
		}
		r = importCSV(h, a, project, file(5000))
		expect(t, r, 200, "")
		if r.get("data", "imported") != float64(0) || r.get("data", "updated") != float64(5000) {
			t.Fatalf("5000 rows again: %s", r.raw[:min(len(r.raw), 500)])
		}
		if _, total := h.testCaseList(a, project, "&tag=all&limit=1"); total != 5000 {
			t.Fatalf("after importing 5000 rows twice: %v test cases", total)
		}
		big := "Title,Notes\nx," + strings.Repeat("n", 10<<20) + "\n"
		expect(t, importCSV(h, a, project, big), 400, "Request body too large")
	})
}
