//go:build integration

// Package helmtest checks the Helm chart in deploy/helm/verdict: it renders the chart with
// `helm template` for several value sets and asserts on the Kubernetes objects it produces.
//
// helm comes from VERDICT_TEST_HELM, which scripts/helm-check.sh exports (scripts/test.sh runs
// it). Without it every test fails: it never skips.
package helmtest

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

const (
	chartDir = "verdict"
	release  = "rel"
	fullname = "rel-verdict" // <release>-<chart>
)

// helm returns the helm binary the test command installed, or fails the test.
func helm(t *testing.T) string {
	t.Helper()
	// Not testenv.SkipShort: importing testenv would link its clients into this small test.
	if testing.Short() {
		t.Skip("needs helm (scripts/helm-check.sh builds it): the full tier (go test without -short) runs it")
	}
	p := os.Getenv("VERDICT_TEST_HELM")
	if p == "" {
		t.Fatal("VERDICT_TEST_HELM is not set: run the test command (scripts/test.sh), or " +
			`eval "$(scripts/helm-check.sh)" before go test ./deploy/...`)
	}
	if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		t.Fatalf("VERDICT_TEST_HELM=%s is not an executable file (%v): run scripts/helm-check.sh", p, err)
	}
	return p
}

// obj is one rendered Kubernetes object (an alias: yaml.v3 decodes nested maps into the
// type of the outer one).
type obj = map[string]any

// rendered is what `helm template` produced, by kind and name.
type rendered []obj

// template renders the chart with the given --set/--values arguments; err carries helm's
// standard error when it refuses.
func template(t *testing.T, args ...string) (rendered, error) {
	t.Helper()
	cmd := exec.Command(helm(t), append([]string{"template", release, chartDir, "--namespace", "verdict"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm template %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	var out rendered
	dec := yaml.NewDecoder(&stdout)
	for {
		var o obj
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("helm template %s: output is not YAML: %v", strings.Join(args, " "), err)
		}
		if o == nil {
			continue // an empty document
		}
		out = append(out, o)
	}
	return out, nil
}

// mustTemplate is template that fails the test when helm refuses.
func mustTemplate(t *testing.T, args ...string) rendered {
	t.Helper()
	r, err := template(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// find returns the object of this kind and name, or nil.
func (r rendered) find(kind, name string) obj {
	for _, o := range r {
		if o["kind"] == kind && str(o, "metadata", "name") == name {
			return o
		}
	}
	return nil
}

func (r rendered) must(t *testing.T, kind, name string) obj {
	t.Helper()
	o := r.find(kind, name)
	if o == nil {
		t.Fatalf("no %s %q among the rendered objects: %v", kind, name, r.kinds())
	}
	return o
}

func (r rendered) kinds() []string {
	var ks []string
	for _, o := range r {
		ks = append(ks, fmt.Sprintf("%v/%s", o["kind"], str(o, "metadata", "name")))
	}
	slices.Sort(ks)
	return ks
}

// at walks maps by key and lists by index (an int).
func at(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func str(v any, path ...any) string {
	s, _ := at(v, path...).(string)
	return s
}

func list(v any, path ...any) []any {
	l, _ := at(v, path...).([]any)
	return l
}

// container returns the first container of a Deployment.
func container(t *testing.T, dep obj) map[string]any {
	t.Helper()
	c, ok := at(dep, "spec", "template", "spec", "containers", 0).(map[string]any)
	if !ok {
		t.Fatalf("Deployment %s has no container", str(dep, "metadata", "name"))
	}
	return c
}

// env returns a container's env entries by name.
func env(c map[string]any) map[string]map[string]any {
	m := map[string]map[string]any{}
	for _, e := range list(c, "env") {
		e := e.(map[string]any)
		m[e["name"].(string)] = e
	}
	return m
}

// stringMap returns the data of a ConfigMap, or the decoded data of a Secret.
func stringMap(t *testing.T, o obj) map[string]string {
	t.Helper()
	out := map[string]string{}
	data, _ := o["data"].(map[string]any)
	for k, v := range data {
		s, ok := v.(string)
		if !ok {
			t.Fatalf("%v %s: data[%s] is %T, not a string", o["kind"], str(o, "metadata", "name"), k, v)
		}
		if o["kind"] == "Secret" {
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				t.Fatalf("Secret data[%s] is not base64: %v", k, err)
			}
			s = string(b)
		}
		out[k] = s
	}
	return out
}

func chartAppVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(chartDir + "/Chart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		APIVersion string `yaml:"apiVersion"`
		AppVersion string `yaml:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if c.APIVersion != "v2" || c.AppVersion == "" {
		t.Fatalf("Chart.yaml: apiVersion %q (want v2), appVersion %q (want one)", c.APIVersion, c.AppVersion)
	}
	return c.AppVersion
}

// checkSecretRef asserts that env entry name is read from key name of the Secret secret,
// optional or not.
func checkSecretRef(t *testing.T, e map[string]map[string]any, name, secret string, optional bool) {
	t.Helper()
	ref, ok := at(e[name], "valueFrom", "secretKeyRef").(map[string]any)
	if !ok {
		t.Errorf("env %s: not read from a Secret: %v", name, e[name])
		return
	}
	if ref["name"] != secret || ref["key"] != name {
		t.Errorf("env %s: secretKeyRef %v, want name %s key %s", name, ref, secret, name)
	}
	if got := ref["optional"] == true; got != optional {
		t.Errorf("env %s: optional=%v, want %v", name, got, optional)
	}
}

// checkHardened asserts the pod's and the container's security settings, and that the pod
// mounts no service account token.
func checkHardened(t *testing.T, dep obj, c map[string]any) {
	t.Helper()
	checkHardenedToken(t, dep, c, false)
}

// checkHardenedToken is checkHardened for a pod that mounts its service account token or not.
func checkHardenedToken(t *testing.T, dep obj, c map[string]any, token bool) {
	t.Helper()
	pod := at(dep, "spec", "template", "spec", "securityContext")
	if at(pod, "runAsNonRoot") != true || str(pod, "seccompProfile", "type") != "RuntimeDefault" {
		t.Errorf("pod securityContext %v: want runAsNonRoot and seccomp RuntimeDefault", pod)
	}
	sc := c["securityContext"]
	for _, k := range []string{"runAsNonRoot", "readOnlyRootFilesystem"} {
		if at(sc, k) != true {
			t.Errorf("container securityContext.%s = %v, want true", k, at(sc, k))
		}
	}
	if at(sc, "allowPrivilegeEscalation") != false {
		t.Errorf("container securityContext.allowPrivilegeEscalation = %v, want false", at(sc, "allowPrivilegeEscalation"))
	}
	if drop := list(sc, "capabilities", "drop"); len(drop) != 1 || drop[0] != "ALL" {
		t.Errorf("container capabilities.drop = %v, want [ALL]", drop)
	}
	if str(sc, "seccompProfile", "type") != "RuntimeDefault" {
		t.Errorf("container seccompProfile = %v, want RuntimeDefault", at(sc, "seccompProfile"))
	}
	if got := at(dep, "spec", "template", "spec", "automountServiceAccountToken"); got != token {
		t.Errorf("Deployment %s: automountServiceAccountToken %v, want %v", str(dep, "metadata", "name"), got, token)
	}
	if c["resources"] == nil {
		t.Error("the container has no resources")
	}
}

// mounts returns a container's volume mounts, mount path to volume name.
func mounts(c map[string]any) map[string]string {
	m := map[string]string{}
	for _, v := range list(c, "volumeMounts") {
		m[str(v, "mountPath")] = str(v, "name")
	}
	return m
}

func volume(dep obj, name string) map[string]any {
	for _, v := range list(dep, "spec", "template", "spec", "volumes") {
		if str(v, "name") == name {
			return v.(map[string]any)
		}
	}
	return nil
}

// optionalSecretKeys are the Secret keys the server reads when present.
var optionalSecretKeys = []string{
	"STRIPE_SECRET_KEY", "STRIPE_WEBHOOK_SECRET", "STRIPE_PRICE_TEAM", "STRIPE_PRICE_ENTERPRISE",
	"STRIPE_API_BASE", "SMTP_HOST", "SMTP_PORT", "SMTP_USERNAME", "SMTP_PASSWORD", "SMTP_FROM",
	"SMTP_TLS", "OPENAI_API_KEY", "GEMINI_API_KEY", "ANTHROPIC_API_KEY", "VERDICT_METRICS_TOKEN",
	"VERDICT_RUNNER_SECRET",
}

func TestDefaults(t *testing.T) {
	r := mustTemplate(t)

	if got, want := r.kinds(), []string{
		"ConfigMap/" + fullname, "Deployment/" + fullname, "Secret/" + fullname,
		"Service/" + fullname, "ServiceAccount/" + fullname,
	}; !slices.Equal(got, want) {
		t.Errorf("objects %v, want %v (no Ingress, PVC, runner or ServiceMonitor by default)", got, want)
	}

	dep := r.must(t, "Deployment", fullname)
	if n := at(dep, "spec", "replicas"); n != 1 {
		t.Errorf("replicas %v, want 1", n)
	}
	if s := str(dep, "spec", "strategy", "type"); s != "Recreate" {
		t.Errorf("strategy %q, want Recreate with one replica (SQLite, ReadWriteOnce)", s)
	}
	c := container(t, dep)
	if img, want := c["image"], "verdict:"+chartAppVersion(t); img != want {
		t.Errorf("image %v, want %s", img, want)
	}
	if args := list(c, "args"); len(args) != 1 || args[0] != "serve" {
		t.Errorf("args %v, want [serve]", args)
	}
	if c["imagePullPolicy"] != "IfNotPresent" {
		t.Errorf("imagePullPolicy %v", c["imagePullPolicy"])
	}
	if p := at(c, "ports", 0); str(p, "name") != "http" || at(p, "containerPort") != 8080 {
		t.Errorf("ports %v, want http 8080", c["ports"])
	}
	for probe, path := range map[string]string{"startupProbe": "/healthz", "livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		if got := str(c, probe, "httpGet", "path"); got != path {
			t.Errorf("%s path %q, want %s", probe, got, path)
		}
		if got := str(c, probe, "httpGet", "port"); got != "http" {
			t.Errorf("%s port %q, want http", probe, got)
		}
	}
	checkHardened(t, dep, c)

	// The data folder and /tmp are writable volumes; the root filesystem is not.
	m := mounts(c)
	if m["/data"] != "data" || m["/tmp"] != "tmp" {
		t.Errorf("volume mounts %v, want /data and /tmp", m)
	}
	if volume(dep, "data")["emptyDir"] == nil {
		t.Errorf("data volume %v, want an emptyDir without persistence", volume(dep, "data"))
	}

	// Non-secret settings from the ConfigMap, secrets from the Secret.
	if ref := str(c, "envFrom", 0, "configMapRef", "name"); ref != fullname {
		t.Errorf("envFrom %v, want the ConfigMap %s", c["envFrom"], fullname)
	}
	e := env(c)
	checkSecretRef(t, e, "JWT_SECRET", fullname, false)
	checkSecretRef(t, e, "ENCRYPTION_KEY", fullname, false)
	checkSecretRef(t, e, "DATABASE_URL", fullname, true)
	checkSecretRef(t, e, "REDIS_URL", fullname, true)
	for _, k := range optionalSecretKeys {
		checkSecretRef(t, e, k, fullname, true)
	}
	for name, entry := range e {
		if _, literal := entry["value"]; literal {
			t.Errorf("env %s has a literal value in the server Deployment; settings belong in the ConfigMap or Secret", name)
		}
	}

	cm := stringMap(t, r.must(t, "ConfigMap", fullname))
	for k, want := range map[string]string{
		"VERDICT_ADDR":       "0.0.0.0:8080",
		"VERDICT_DATA_DIR":   "/data",
		"VERDICT_PUBLIC_URL": "http://" + fullname + ":8080",
		"VERDICT_LOG_FORMAT": "json",
		"VERDICT_LOG_LEVEL":  "info",
		"VERDICT_RUNNER":     "none",
	} {
		if cm[k] != want {
			t.Errorf("ConfigMap %s = %q, want %q", k, cm[k], want)
		}
	}
	if len(cm) != 6 {
		t.Errorf("ConfigMap %v: empty settings must be left out", cm)
	}

	// Generated secrets: the server's own checks (at least 32 bytes; 64 hex characters).
	sec := stringMap(t, r.must(t, "Secret", fullname))
	if len(sec["JWT_SECRET"]) < 32 {
		t.Errorf("generated JWT_SECRET has %d bytes, want at least 32", len(sec["JWT_SECRET"]))
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(sec["ENCRYPTION_KEY"]) {
		t.Errorf("generated ENCRYPTION_KEY %q is not 64 hex characters", sec["ENCRYPTION_KEY"])
	}
	if len(sec) != 2 {
		t.Errorf("Secret keys %v: want only JWT_SECRET and ENCRYPTION_KEY when nothing else is given", keys(sec))
	}

	svc := r.must(t, "Service", fullname)
	if p := at(svc, "spec", "ports", 0); at(p, "port") != 8080 || str(p, "targetPort") != "http" || str(p, "name") != "http" {
		t.Errorf("Service port %v, want http 8080 → http", p)
	}
	if sel, pod := at(svc, "spec", "selector"), at(dep, "spec", "template", "metadata", "labels"); !subset(sel, pod) {
		t.Errorf("Service selector %v does not select the server pods %v", sel, pod)
	}
}

func TestReplicasNeedDatabaseAndRedis(t *testing.T) {
	for name, args := range map[string][]string{
		"neither":   {"--set", "replicaCount=3"},
		"database":  {"--set", "replicaCount=3", "--set", "secrets.databaseURL=postgres://v@db/verdict"},
		"redis":     {"--set", "replicaCount=3", "--set", "secrets.redisURL=redis://cache:6379"},
		"two, none": {"--set", "replicaCount=2"},
	} {
		_, err := template(t, args...)
		if err == nil || !strings.Contains(err.Error(), "needs PostgreSQL and Redis") {
			t.Errorf("%s: helm template %v: err %v, want a refusal naming PostgreSQL and Redis", name, args, err)
		}
	}

	const db, redis = "postgres://verdict:pw@db:5432/verdict", "redis://:pw@cache:6379/0"
	r := mustTemplate(t, "--set", "replicaCount=3", "--set", "secrets.databaseURL="+db, "--set", "secrets.redisURL="+redis)
	dep := r.must(t, "Deployment", fullname)
	if n := at(dep, "spec", "replicas"); n != 3 {
		t.Errorf("replicas %v, want 3", n)
	}
	if s := str(dep, "spec", "strategy", "type"); s != "RollingUpdate" {
		t.Errorf("strategy %q, want RollingUpdate with several replicas", s)
	}
	e := env(container(t, dep))
	checkSecretRef(t, e, "DATABASE_URL", fullname, false)
	checkSecretRef(t, e, "REDIS_URL", fullname, false)
	sec := stringMap(t, r.must(t, "Secret", fullname))
	if sec["DATABASE_URL"] != db || sec["REDIS_URL"] != redis {
		t.Errorf("Secret DATABASE_URL %q REDIS_URL %q, want %q %q", sec["DATABASE_URL"], sec["REDIS_URL"], db, redis)
	}
	checkNotIn(t, r.must(t, "ConfigMap", fullname), db, redis, "pw@")
}

// TestSecretsStayOutOfConfigMap gives every secret value and checks each lands in the Secret,
// and none in the ConfigMap or the Deployment.
func TestSecretsStayOutOfConfigMap(t *testing.T) {
	given := map[string]string{
		"secrets.jwtSecret":              "JWT_SECRET=jwt-0123456789abcdef0123456789abcdef",
		"secrets.encryptionKey":          "ENCRYPTION_KEY=" + strings.Repeat("ab", 32),
		"secrets.databaseURL":            "DATABASE_URL=postgres://u:dbpass@db/verdict",
		"secrets.redisURL":               "REDIS_URL=redis://:redispass@cache:6379",
		"secrets.stripe.secretKey":       "STRIPE_SECRET_KEY=sk_test_marker",
		"secrets.stripe.webhookSecret":   "STRIPE_WEBHOOK_SECRET=whsec_marker",
		"secrets.stripe.priceTeam":       "STRIPE_PRICE_TEAM=price_team_marker",
		"secrets.stripe.priceEnterprise": "STRIPE_PRICE_ENTERPRISE=price_ent_marker",
		"secrets.stripe.apiBase":         "STRIPE_API_BASE=http://stripe-mock-marker:12111",
		"secrets.smtp.host":              "SMTP_HOST=smtp-marker.example.com",
		"secrets.smtp.port":              "SMTP_PORT=2525",
		"secrets.smtp.username":          "SMTP_USERNAME=smtp-user-marker",
		"secrets.smtp.password":          "SMTP_PASSWORD=smtp-pass-marker",
		"secrets.smtp.from":              "SMTP_FROM=from-marker@example.com",
		"secrets.smtp.tls":               "SMTP_TLS=tls",
		"secrets.openaiAPIKey":           "OPENAI_API_KEY=sk-openai-marker",
		"secrets.geminiAPIKey":           "GEMINI_API_KEY=gemini-marker",
		"secrets.anthropicAPIKey":        "ANTHROPIC_API_KEY=sk-ant-marker",
		"secrets.runnerSecret":           "VERDICT_RUNNER_SECRET=runner-secret-marker",
		"metrics.token":                  "VERDICT_METRICS_TOKEN=metrics-token-marker",
		"secrets.s3.accessKey":           "VERDICT_S3_ACCESS_KEY=s3-access-marker",
		"secrets.s3.secretKey":           "VERDICT_S3_SECRET_KEY=s3-secret-marker",
	}
	args := []string{"--set", "replicaCount=2", "--set", "runner.enabled=true", "--set", "metrics.serviceMonitor.enabled=true",
		"--set", "config.defaultPlan=enterprise", "--set", "config.reportsURL=https://reports.example.com",
		"--set", "config.s3.bucket=reports", "--set", "config.s3.endpoint=http://minio:9000", "--set", "config.s3.pathStyle=true"}
	var values []string
	for path, kv := range given {
		v := kv[strings.IndexByte(kv, '=')+1:]
		args = append(args, "--set-string", path+"="+v)
		if path != "secrets.smtp.port" && path != "secrets.smtp.tls" { // too short to search for
			values = append(values, v)
		}
	}
	r := mustTemplate(t, args...)

	sec := stringMap(t, r.must(t, "Secret", fullname))
	for path, kv := range given {
		k, v, _ := strings.Cut(kv, "=")
		if sec[k] != v {
			t.Errorf("%s: Secret %s = %q, want %q", path, k, sec[k], v)
		}
	}
	cm := r.must(t, "ConfigMap", fullname)
	checkNotIn(t, cm, values...)
	for k := range stringMap(t, cm) {
		if _, secret := sec[k]; secret {
			t.Errorf("ConfigMap carries %s, a key of the Secret", k)
		}
	}
	if got := stringMap(t, cm); got["VERDICT_DEFAULT_PLAN"] != "enterprise" || got["VERDICT_REPORTS_URL"] != "https://reports.example.com" ||
		got["VERDICT_S3_BUCKET"] != "reports" || got["VERDICT_S3_ENDPOINT"] != "http://minio:9000" || got["VERDICT_S3_PATH_STYLE"] != "true" {
		t.Errorf("ConfigMap %v: want VERDICT_DEFAULT_PLAN, VERDICT_REPORTS_URL and the S3 settings", got)
	}
	for _, kind := range []string{"Deployment", "ServiceMonitor"} {
		for _, o := range r {
			if o["kind"] == kind {
				checkNotIn(t, o, values...)
			}
		}
	}
}

func TestRunnerAndServiceMonitor(t *testing.T) {
	r := mustTemplate(t, "--set", "runner.enabled=true", "--set", "runner.slots=4",
		"--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.token=scrape-me")

	// The server still runs no suite itself.
	if cm := stringMap(t, r.must(t, "ConfigMap", fullname)); cm["VERDICT_RUNNER"] != "none" {
		t.Errorf("server VERDICT_RUNNER %q, want none", cm["VERDICT_RUNNER"])
	}

	dep := r.must(t, "Deployment", fullname+"-runner")
	c := container(t, dep)
	if args := fmt.Sprint(list(c, "args")); args != "[runner --server http://"+fullname+":8080]" {
		t.Errorf("runner args %s", args)
	}
	e := env(c)
	if v := e["VERDICT_RUNNER_SLOTS"]["value"]; v != "4" {
		t.Errorf("VERDICT_RUNNER_SLOTS %v, want 4", v)
	}
	checkSecretRef(t, e, "VERDICT_RUNNER_SECRET", fullname, false)
	for _, k := range []string{"JWT_SECRET", "ENCRYPTION_KEY", "DATABASE_URL"} {
		if _, ok := e[k]; ok {
			t.Errorf("the runner gets %s; it needs only the runner secret", k)
		}
	}
	checkHardened(t, dep, c)
	if m := mounts(c); m["/tmp"] != "tmp" {
		t.Errorf("runner mounts %v, want /tmp", m)
	}
	if sel, pod := at(dep, "spec", "selector", "matchLabels"), at(r.must(t, "Deployment", fullname), "spec", "template", "metadata", "labels"); subset(sel, pod) {
		t.Errorf("runner selector %v also selects the server pods", sel)
	}
	if svc := at(r.must(t, "Service", fullname), "spec", "selector"); subset(svc, at(dep, "spec", "template", "metadata", "labels")) {
		t.Errorf("the Service selector %v also selects the runner pods", svc)
	}
	sec := stringMap(t, r.must(t, "Secret", fullname))
	if len(sec["VERDICT_RUNNER_SECRET"]) < 32 {
		t.Errorf("generated VERDICT_RUNNER_SECRET %q: want at least 32 characters", sec["VERDICT_RUNNER_SECRET"])
	}
	if sec["VERDICT_METRICS_TOKEN"] != "scrape-me" {
		t.Errorf("Secret VERDICT_METRICS_TOKEN %q", sec["VERDICT_METRICS_TOKEN"])
	}

	sm := r.must(t, "ServiceMonitor", fullname)
	if v := str(sm, "apiVersion"); v != "monitoring.coreos.com/v1" {
		t.Errorf("ServiceMonitor apiVersion %q", v)
	}
	ep := at(sm, "spec", "endpoints", 0)
	if str(ep, "port") != "http" || str(ep, "path") != "/metrics" {
		t.Errorf("ServiceMonitor endpoint %v, want port http path /metrics", ep)
	}
	if b := at(ep, "bearerTokenSecret"); str(b, "name") != fullname || str(b, "key") != "VERDICT_METRICS_TOKEN" || at(b, "optional") != nil {
		t.Errorf("bearerTokenSecret %v, want %s/VERDICT_METRICS_TOKEN", b, fullname)
	}
	if sel, labels := at(sm, "spec", "selector", "matchLabels"), at(r.must(t, "Service", fullname), "metadata", "labels"); !subset(sel, labels) {
		t.Errorf("ServiceMonitor selector %v does not select the Service %v", sel, labels)
	}

	// Without a token, no bearer token.
	r = mustTemplate(t, "--set", "metrics.serviceMonitor.enabled=true")
	if b := at(r.must(t, "ServiceMonitor", fullname), "spec", "endpoints", 0, "bearerTokenSecret"); b != nil {
		t.Errorf("bearerTokenSecret %v without metrics.token", b)
	}
	if r.find("Deployment", fullname+"-runner") != nil {
		t.Error("a runner Deployment although runner.enabled is false")
	}
}

func TestExistingSecret(t *testing.T) {
	r := mustTemplate(t, "--set", "secrets.existingSecret=mine", "--set", "replicaCount=3",
		"--set", "metrics.serviceMonitor.enabled=true")
	for _, o := range r {
		if o["kind"] == "Secret" {
			t.Errorf("a Secret %s is rendered although existingSecret is set", str(o, "metadata", "name"))
		}
	}
	e := env(container(t, r.must(t, "Deployment", fullname)))
	checkSecretRef(t, e, "JWT_SECRET", "mine", false)
	checkSecretRef(t, e, "ENCRYPTION_KEY", "mine", false)
	checkSecretRef(t, e, "DATABASE_URL", "mine", false) // several replicas: the pods need them
	checkSecretRef(t, e, "REDIS_URL", "mine", false)
	checkSecretRef(t, e, "SMTP_PASSWORD", "mine", true)
	b := at(r.must(t, "ServiceMonitor", fullname), "spec", "endpoints", 0, "bearerTokenSecret")
	if str(b, "name") != "mine" || at(b, "optional") != true {
		t.Errorf("bearerTokenSecret %v, want mine's VERDICT_METRICS_TOKEN, optional", b)
	}
}

func TestIngressAndPersistence(t *testing.T) {
	r := mustTemplate(t, "--set", "ingress.enabled=true", "--set", "ingress.className=nginx",
		"--set", "ingress.hosts[0].host=qa.example.com", "--set", "ingress.hosts[0].paths[0].path=/",
		"--set", "ingress.hosts[0].paths[0].pathType=Prefix",
		"--set", "ingress.tls[0].secretName=qa-tls", "--set", "ingress.tls[0].hosts[0]=qa.example.com",
		"--set", "persistence.enabled=true", "--set", "persistence.size=20Gi", "--set", "image.tag=1.2.3",
		"--set", "image.repository=registry.example.com/verdict")
	ing := r.must(t, "Ingress", fullname)
	rule := at(ing, "spec", "rules", 0)
	if str(rule, "host") != "qa.example.com" || str(rule, "http", "paths", 0, "backend", "service", "name") != fullname ||
		str(rule, "http", "paths", 0, "backend", "service", "port", "name") != "http" {
		t.Errorf("Ingress rule %v", rule)
	}
	if cm := stringMap(t, r.must(t, "ConfigMap", fullname)); cm["VERDICT_PUBLIC_URL"] != "https://qa.example.com" {
		t.Errorf("VERDICT_PUBLIC_URL %q, want the ingress host over https", cm["VERDICT_PUBLIC_URL"])
	}
	pvc := r.must(t, "PersistentVolumeClaim", fullname+"-data")
	if s := str(pvc, "spec", "resources", "requests", "storage"); s != "20Gi" {
		t.Errorf("PVC size %q", s)
	}
	dep := r.must(t, "Deployment", fullname)
	if claim := str(volume(dep, "data"), "persistentVolumeClaim", "claimName"); claim != fullname+"-data" {
		t.Errorf("data volume %v, want the claim", volume(dep, "data"))
	}
	if img := container(t, dep)["image"]; img != "registry.example.com/verdict:1.2.3" {
		t.Errorf("image %v", img)
	}

	r = mustTemplate(t, "--set", "persistence.enabled=true", "--set", "persistence.existingClaim=old-data")
	if r.find("PersistentVolumeClaim", fullname+"-data") != nil {
		t.Error("a PVC is created although existingClaim is set")
	}
	if claim := str(volume(r.must(t, "Deployment", fullname), "data"), "persistentVolumeClaim", "claimName"); claim != "old-data" {
		t.Errorf("claim %q, want old-data", claim)
	}
}

func TestRefusedValues(t *testing.T) {
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"short key":      {[]string{"--set", "secrets.encryptionKey=abc"}, "64 hex characters"},
		"short jwt":      {[]string{"--set", "secrets.jwtSecret=short"}, "at least 32 bytes"},
		"sqlite url":     {[]string{"--set", "secrets.databaseURL=sqlite:/data/x.db"}, "postgres://"},
		"redis url":      {[]string{"--set", "secrets.redisURL=cache:6379"}, "redis://"},
		"runner mode":    {[]string{"--set", "config.runner=remote"}, "none or embedded"},
		"embedded, many": {[]string{"--set", "config.runner=embedded", "--set", "replicaCount=2", "--set", "secrets.existingSecret=s"}, "replicaCount=1 only"},
		"zero replicas":  {[]string{"--set", "replicaCount=0"}, "at least 1"},
		"embedded kube, many": {[]string{"--set", "config.runner=embedded", "--set", "config.backend=kubernetes",
			"--set", "replicaCount=2", "--set", "secrets.existingSecret=s"}, "replicaCount=1 only"},
		"backend, no embedded": {[]string{"--set", "config.backend=kubernetes"}, "config.runner=embedded"},
		"server backend":       {[]string{"--set", "config.runner=embedded", "--set", "config.backend=podman"}, "docker or kubernetes"},
		"runner backend":       {[]string{"--set", "runner.enabled=true", "--set", "runner.backend=podman"}, "docker or kubernetes"},
		"pull policy": {[]string{"--set", "runner.enabled=true", "--set", "runner.backend=kubernetes",
			"--set", "runner.kubernetes.pullPolicy=Sometimes"}, "Always, IfNotPresent or Never"},
		"namespace": {[]string{"--set", "runner.enabled=true", "--set", "runner.backend=kubernetes",
			"--set", "runner.kubernetes.namespace=Runs_1"}, "namespace name"},
		"replicas no url": {[]string{"--set", "replicaCount=5", "--set", "secrets.jwtSecret=" + strings.Repeat("x", 32)}, "needs PostgreSQL and Redis"},
	} {
		_, err := template(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one containing %q", name, err, c.want)
		}
	}
}

// checkNotIn fails when any of the strings appears anywhere in the object (decoded Secret data
// aside: this is for objects that must hold no secret).
func checkNotIn(t *testing.T, o obj, secrets ...string) {
	t.Helper()
	b, err := yaml.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if strings.Contains(string(b), s) {
			t.Errorf("%v %s contains the secret value %q", o["kind"], str(o, "metadata", "name"), s)
		}
	}
}

// subset reports whether every label of sel is in labels.
func subset(sel, labels any) bool {
	s, _ := sel.(map[string]any)
	l, _ := labels.(map[string]any)
	if len(s) == 0 {
		return false
	}
	for k, v := range s {
		if l[k] != v {
			return false
		}
	}
	return true
}

func keys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// runsRules are the Role's rules, "group/resource" to verbs: exactly the calls of the
// Kubernetes backend (internal/run/kubernetes).
var runsRules = map[string][]string{
	"batch/jobs":                        {"create", "delete", "get", "list"},
	"/secrets":                          {"create", "delete", "update"},
	"/pods":                             {"deletecollection", "list", "watch"},
	"/pods/log":                         {"get"},
	"/pods/exec":                        {"create", "get"}, // WebSocket exec over GET, SPDY over POST
	"/events":                           {"list"},
	"networking.k8s.io/networkpolicies": {"create", "get", "update"},
}

// checkRunsRBAC asserts the Role <fullname>-runs and its RoleBinding in namespace ns: exactly
// runsRules, bound to the service accounts subjects (of the release's namespace).
func checkRunsRBAC(t *testing.T, r rendered, ns string, subjects ...string) {
	t.Helper()
	role := r.must(t, "Role", fullname+"-runs")
	if got := str(role, "metadata", "namespace"); got != ns {
		t.Errorf("Role namespace %q, want %q", got, ns)
	}
	got := map[string][]string{}
	for _, rule := range list(role, "rules") {
		if rule.(map[string]any)["resourceNames"] != nil || rule.(map[string]any)["nonResourceURLs"] != nil {
			t.Errorf("rule %v: want resources and verbs only", rule)
		}
		for _, g := range list(rule, "apiGroups") {
			for _, res := range list(rule, "resources") {
				k := g.(string) + "/" + res.(string)
				for _, v := range list(rule, "verbs") {
					got[k] = append(got[k], v.(string))
				}
			}
		}
	}
	for k := range got {
		slices.Sort(got[k])
	}
	if len(got) != len(runsRules) {
		t.Errorf("Role rules cover %v, want exactly %v", keysOf(got), keysOf(runsRules))
	}
	for k, want := range runsRules {
		if !slices.Equal(got[k], want) {
			t.Errorf("Role verbs on %s: %v, want %v", k, got[k], want)
		}
	}

	rb := r.must(t, "RoleBinding", fullname+"-runs")
	if got := str(rb, "metadata", "namespace"); got != ns {
		t.Errorf("RoleBinding namespace %q, want %q", got, ns)
	}
	if ref := at(rb, "roleRef"); str(ref, "kind") != "Role" || str(ref, "name") != fullname+"-runs" ||
		str(ref, "apiGroup") != "rbac.authorization.k8s.io" {
		t.Errorf("RoleBinding roleRef %v, want the Role %s-runs", ref, fullname)
	}
	var names []string
	for _, s := range list(rb, "subjects") {
		if str(s, "kind") != "ServiceAccount" || str(s, "namespace") != "verdict" {
			t.Errorf("RoleBinding subject %v: want a ServiceAccount of the release's namespace (verdict)", s)
		}
		names = append(names, str(s, "name"))
	}
	if !slices.Equal(names, subjects) {
		t.Errorf("RoleBinding subjects %v, want %v", names, subjects)
	}
}

func keysOf(m map[string][]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// checkKubeEnv asserts the Kubernetes backend's settings, NAME to value.
func checkKubeEnv(t *testing.T, what string, got map[string]string, ns, helper string) {
	t.Helper()
	for k, want := range map[string]string{
		"VERDICT_BACKEND":           "kubernetes",
		"VERDICT_K8S_NAMESPACE":     ns,
		"VERDICT_K8S_HELPER_IMAGE":  helper,
		"VERDICT_K8S_PULL_POLICY":   "IfNotPresent",
		"VERDICT_K8S_START_TIMEOUT": "2m",
	} {
		if got[k] != want {
			t.Errorf("%s: %s = %q, want %q", what, k, got[k], want)
		}
	}
	for _, k := range []string{"DOCKER_HOST", "KUBECONFIG"} {
		if _, ok := got[k]; ok {
			t.Errorf("%s: %s is set (%q); the Kubernetes backend uses the in-cluster configuration", what, k, got[k])
		}
	}
}

// envValues returns a container's literal env values by name.
func envValues(c map[string]any) map[string]string {
	out := map[string]string{}
	for name, e := range env(c) {
		if v, ok := e["value"].(string); ok {
			out[name] = v
		}
	}
	return out
}

func TestRunnerOnKubernetes(t *testing.T) {
	// runner.dockerHost is ignored on Kubernetes.
	r := mustTemplate(t, "--set", "runner.enabled=true", "--set", "runner.backend=kubernetes",
		"--set", "runner.dockerHost=tcp://engine:2376")
	image := "verdict:" + chartAppVersion(t)

	// The runners: their own account, its token mounted, the backend's settings.
	sa := r.must(t, "ServiceAccount", fullname+"-runner")
	if at(sa, "automountServiceAccountToken") != false {
		t.Errorf("runner ServiceAccount automountServiceAccountToken %v, want false (the pods ask for it)", at(sa, "automountServiceAccountToken"))
	}
	dep := r.must(t, "Deployment", fullname+"-runner")
	if got := str(dep, "spec", "template", "spec", "serviceAccountName"); got != fullname+"-runner" {
		t.Errorf("runner pods' serviceAccountName %q, want %s-runner", got, fullname)
	}
	c := container(t, dep)
	checkHardenedToken(t, dep, c, true)
	checkKubeEnv(t, "runner env", envValues(c), "verdict", image)
	checkSecretRef(t, env(c), "VERDICT_RUNNER_SECRET", fullname, false)

	// The server keeps VERDICT_RUNNER=none: it opens no backend, so it gets neither the
	// backend's settings nor the Role, nor a token.
	cm := stringMap(t, r.must(t, "ConfigMap", fullname))
	if cm["VERDICT_RUNNER"] != "none" {
		t.Errorf("server VERDICT_RUNNER %q, want none", cm["VERDICT_RUNNER"])
	}
	if _, ok := cm["VERDICT_BACKEND"]; ok {
		t.Errorf("server ConfigMap sets VERDICT_BACKEND=%q: a server without a runner opens no backend", cm["VERDICT_BACKEND"])
	}
	server := r.must(t, "Deployment", fullname)
	checkHardenedToken(t, server, container(t, server), false)
	if got := at(r.must(t, "ServiceAccount", fullname), "automountServiceAccountToken"); got != false {
		t.Errorf("server ServiceAccount automountServiceAccountToken %v, want false", got)
	}

	checkRunsRBAC(t, r, "verdict", fullname+"-runner")
}

func TestKubernetesNamespaceAndImage(t *testing.T) {
	r := mustTemplate(t, "--set", "runner.enabled=true", "--set", "runner.backend=kubernetes",
		"--set", "runner.kubernetes.namespace=verdict-runs", "--set", "image.repository=registry.example.com/verdict",
		"--set", "image.tag=1.2.3")
	// The Role and RoleBinding go to the runs' namespace; the accounts stay in the release's.
	checkRunsRBAC(t, r, "verdict-runs", fullname+"-runner")
	if ns := str(r.must(t, "ServiceAccount", fullname+"-runner"), "metadata", "namespace"); ns != "" && ns != "verdict" {
		t.Errorf("runner ServiceAccount namespace %q, want the release's", ns)
	}
	for _, o := range r {
		if o["kind"] == "Namespace" {
			t.Errorf("the chart creates Namespace %s; the runs' namespace is the user's", str(o, "metadata", "name"))
		}
	}
	c := container(t, r.must(t, "Deployment", fullname+"-runner"))
	checkKubeEnv(t, "runner env", envValues(c), "verdict-runs", "registry.example.com/verdict:1.2.3")

	// Every setting given.
	r = mustTemplate(t, "--set", "runner.enabled=true", "--set", "runner.backend=kubernetes",
		"--set", "runner.kubernetes.helperImage=mirror.example.com/verdict:1.2.3",
		"--set", "runner.kubernetes.pullPolicy=Always", "--set", "runner.kubernetes.startTimeout=5m")
	e := envValues(container(t, r.must(t, "Deployment", fullname+"-runner")))
	if e["VERDICT_K8S_HELPER_IMAGE"] != "mirror.example.com/verdict:1.2.3" || e["VERDICT_K8S_PULL_POLICY"] != "Always" ||
		e["VERDICT_K8S_START_TIMEOUT"] != "5m" {
		t.Errorf("runner env %v: want the given helper image, pull policy and start timeout", e)
	}
}

func TestEmbeddedOnKubernetes(t *testing.T) {
	r := mustTemplate(t, "--set", "config.runner=embedded", "--set", "config.backend=kubernetes",
		"--set", "config.dockerHost=tcp://engine:2376")
	cm := stringMap(t, r.must(t, "ConfigMap", fullname))
	if cm["VERDICT_RUNNER"] != "embedded" {
		t.Errorf("VERDICT_RUNNER %q, want embedded", cm["VERDICT_RUNNER"])
	}
	checkKubeEnv(t, "server ConfigMap", cm, "verdict", "verdict:"+chartAppVersion(t))
	server := r.must(t, "Deployment", fullname)
	checkHardenedToken(t, server, container(t, server), true)
	checkRunsRBAC(t, r, "verdict", fullname)
	if r.find("ServiceAccount", fullname+"-runner") != nil || r.find("Deployment", fullname+"-runner") != nil {
		t.Error("a runner ServiceAccount or Deployment although runner.enabled is false")
	}
}

// TestTokenStaysUnmounted: without the Kubernetes backend, no pod mounts a token and there is
// no Role.
func TestTokenStaysUnmounted(t *testing.T) {
	for name, args := range map[string][]string{
		"defaults":        nil,
		"docker runners":  {"--set", "runner.enabled=true", "--set", "runner.dockerHost=tcp://engine:2376"},
		"embedded docker": {"--set", "config.runner=embedded", "--set", "config.dockerHost=tcp://engine:2376"},
		// The embedded runner decides the server's backend; the runners still use Kubernetes.
		"embedded docker, kube runners": {"--set", "config.runner=embedded", "--set", "runner.enabled=true",
			"--set", "runner.backend=kubernetes"},
	} {
		t.Run(name, func(t *testing.T) {
			r := mustTemplate(t, args...)
			server := r.must(t, "Deployment", fullname)
			checkHardened(t, server, container(t, server))
			cm := stringMap(t, r.must(t, "ConfigMap", fullname))
			for k := range cm {
				if strings.HasPrefix(k, "VERDICT_K8S_") || k == "VERDICT_BACKEND" {
					t.Errorf("server ConfigMap has %s without the Kubernetes backend", k)
				}
			}
			switch name {
			case "embedded docker, kube runners": // the Role for the runners only
				checkRunsRBAC(t, r, "verdict", fullname+"-runner")
			default:
				for _, kind := range []string{"Role", "RoleBinding", "ServiceAccount"} {
					if r.find(kind, fullname+"-runs") != nil || r.find(kind, fullname+"-runner") != nil {
						t.Errorf("a %s for the Kubernetes backend without it: %v", kind, r.kinds())
					}
				}
			}
			if name == "docker runners" {
				dep := r.must(t, "Deployment", fullname+"-runner")
				c := container(t, dep)
				checkHardened(t, dep, c)
				if sa := str(dep, "spec", "template", "spec", "serviceAccountName"); sa != fullname {
					t.Errorf("docker runners' serviceAccountName %q, want the server's %s", sa, fullname)
				}
				if e := envValues(c); e["DOCKER_HOST"] != "tcp://engine:2376" || e["VERDICT_BACKEND"] != "" {
					t.Errorf("docker runner env %v: want DOCKER_HOST and no VERDICT_BACKEND", e)
				}
			}
		})
	}
}
