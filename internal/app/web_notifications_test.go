//go:build integration

package app_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"verdict/internal/notify/notifytest"
)

// The dashboard's notifications page: an admin adds a webhook (its generated secret shown once,
// in the answer), sees its deliveries and redelivers one, deletes it; a viewer sees the page
// without its forms, and a forged form of theirs is a 403; another organization's project is a
// 404. The receiver's URL is on no page.
func TestWebNotifications(t *testing.T) {
	h := notifyHarness(t, harnessOpts{dialect: "sqlite"})
	admin := h.signup("webnotify@example.com", "Web Notify Co")
	a := bearer(admin.token)
	viewer := h.join(admin, "viewer@example.com", "viewer")
	p := h.do("POST", "/api/projects", a, map[string]any{"name": "Shop", "image": passImage})
	expect(t, p, 201, "")
	project := p.str("project", "id")
	path := "/projects/" + project + "/notifications"

	b := h.withSession(t, admin.token)
	wantStatus(t, "the project's page", b.get("/projects/"+project), 200, `href="/projects/`+project+`/notifications"`)
	wantStatus(t, "the empty page", b.get(path), 200, "This project has no notifications.")

	hook := notifytest.Webhook(t, "", "")
	refused := b.post(path, url.Values{"kind": {"webhook"}, "url": {"http://169.254.169.254/x"}, "on": {"failure"}})
	wantStatus(t, "an internal URL", refused, 400, "url 169.254.169.254 is a loopback, private, link-local or reserved address")
	created := b.post(path, url.Values{"kind": {"webhook"}, "url": {hook.URL + "/hooks/page-token-path"}, "on": {"failure"}})
	wantStatus(t, "created", created, 201, "Copy its signing secret now")
	secret := between(created.body, `id="new-secret-value" class="mono" type="text" readonly value="`, `"`)
	if !strings.HasPrefix(secret, "whsec_") || strings.Contains(created.body, "page-token-path") {
		t.Fatalf("the created page: secret %q; body %s", secret, created.body)
	}
	// The receiver checks signatures with the secret the page showed.
	hook.Close()
	rc := notifytest.Webhook(t, strings.TrimPrefix(hook.URL, "http://"), secret)

	task := h.queue(a, map[string]any{"projectId": project, "envVars": map[string]string{"FAIL_TESTS": "health endpoint returns 200"}})
	h.waitFor(a, task, 90*time.Second, final)
	waitGot(t, rc, 1, 30*time.Second)
	var list page
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		list = b.get(path)
		if strings.Contains(list.body, "<td>delivered</td>") || time.Now().After(deadline) {
			break
		}
	}
	wantStatus(t, "the deliveries", list, 200, "<td>delivered</td>")
	if strings.Contains(list.body, "page-token-path") || strings.Contains(list.body, secret) {
		t.Fatalf("the page shows the URL or the secret: %s", list.body)
	}
	nid := h.do("GET", "/api/projects/"+project+"/notifications", a, nil).get("data", "notifications").([]any)[0].(map[string]any)["id"].(string)
	did := h.do("GET", "/api/projects/"+project+"/notifications/"+nid+"/deliveries", a, nil).get("data", "deliveries").([]any)[0].(map[string]any)["id"].(string)
	redeliver := path + "/" + nid + "/deliveries/" + did + "/redeliver"
	wantStatus(t, "redeliver", b.follow("redeliver", b.post(redeliver, nil), 200, "Delivery of run.finished queued again."), 200, "")
	waitGot(t, rc, 2, 30*time.Second)

	v := h.withSession(t, viewer.token)
	vp := v.get(path)
	wantStatus(t, "the viewer's page", vp, 200, "127.0.0.1")
	if strings.Contains(vp.body, "Add a notification") || strings.Contains(vp.body, "Redeliver") {
		t.Fatalf("the viewer's page has the admins' forms: %s", vp.body)
	}
	wantStatus(t, "a viewer's forged delete", v.post(path+"/"+nid+"/delete", nil), 403, "This action needs the admin role")

	o := h.withSession(t, h.signup("other@example.com", "Other Co").token)
	wantStatus(t, "another organization's project", o.get(path), 404, "")

	wantStatus(t, "deleted", b.follow("delete", b.post(path+"/"+nid+"/delete", nil), 200, "Notification deleted."), 200, "This project has no notifications.")
}

func between(s, from, to string) string {
	_, rest, ok := strings.Cut(s, from)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, to)
	return v
}
