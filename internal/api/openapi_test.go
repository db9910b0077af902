package api

// The API reference (docs/openapi.yaml) is checked against the router here, so the two cannot
// drift: every registered route must be documented and every documented operation routed; the
// document must be well formed (OpenAPI 3.1, responses on every operation, declared path
// parameters, resolvable $refs, known security schemes); and what it says about each route's
// credentials and rate limit must be what the server does.
//
// Mapping between router patterns and document operations:
//   - "METHOD /path/{param}" is the operation METHOD on the document path "/path/{param}";
//     a trailing "{name...}" wildcard is written "{name}" in the document, and "{$}" is dropped.
//   - A pattern without a method is a mounted handler that brings its own routing (Socket.IO at
//     "/socket.io/"). It is documented by the operations it serves: at least one operation must
//     sit at its path, or under it when the pattern ends in "/" (e.g. GET /socket.io/ and
//     GET /socket.io/socket.io.js for "/socket.io/"), and every operation under it counts as
//     routed.
//   - A documented HEAD is routed by the GET pattern of the same path (net/http serves both).

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"verdict/docs"
	"verdict/internal/billing"
	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/ratelimit"
)

var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// openAPIDoc is the parsed document with the helpers the checks need.
type openAPIDoc struct {
	root map[string]any
}

// docOperation is one operation of the document.
type docOperation struct {
	Method string // upper case
	Path   string
	Item   map[string]any // the path item
	Op     map[string]any
}

func (o docOperation) key() string { return o.Method + " " + o.Path }

func loadOpenAPI(t *testing.T) *openAPIDoc {
	t.Helper()
	var raw any
	if err := yaml.Unmarshal(docs.OpenAPI, &raw); err != nil {
		t.Fatalf("docs/openapi.yaml is not valid YAML: %v", err)
	}
	root, ok := normalizeYAML(raw).(map[string]any)
	if !ok {
		t.Fatalf("docs/openapi.yaml: the document is not a mapping")
	}
	return &openAPIDoc{root: root}
}

// normalizeYAML turns every mapping into map[string]any (YAML allows non-string keys, e.g. an
// unquoted response code 200).
func normalizeYAML(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeYAML(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = normalizeYAML(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = normalizeYAML(e)
		}
		return x
	default:
		return v
	}
}

func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }

func (d *openAPIDoc) operations() []docOperation {
	var ops []docOperation
	for path, item := range asMap(d.root["paths"]) {
		pi := asMap(item)
		for _, m := range httpMethods {
			if op := asMap(pi[m]); op != nil {
				ops = append(ops, docOperation{Method: strings.ToUpper(m), Path: path, Item: pi, Op: op})
			}
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].key() < ops[j].key() })
	return ops
}

// resolve follows a local reference "#/a/b~1c".
func (d *openAPIDoc) resolve(ref string) (any, error) {
	ptr, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, fmt.Errorf("only local references (#/...) are used here")
	}
	var cur any = d.root
	for _, tok := range strings.Split(ptr, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			next, found := c[tok]
			if !found {
				return nil, fmt.Errorf("no %q", tok)
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("no index %q", tok)
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("cannot descend into %q", tok)
		}
	}
	return cur, nil
}

// deref returns v, or what it references when v is a {$ref} object.
func (d *openAPIDoc) deref(v any) map[string]any {
	for range 10 {
		m := asMap(v)
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		if v, _ = d.resolve(ref); v == nil {
			return nil
		}
	}
	return nil
}

// access is what the operation's security requirement says the router's middleware does. An
// operation marked `x-authenticated-by-handler: true` is registered as public and checks its
// credentials in its handler, so any security it lists is its own business.
func (d *openAPIDoc) access(op map[string]any) (access, error) {
	if op["x-authenticated-by-handler"] == true {
		return public, nil
	}
	sec, found := op["security"]
	if !found {
		sec = d.root["security"]
	}
	list, _ := sec.([]any)
	schemes := map[string]bool{}
	for _, req := range list {
		r := asMap(req)
		if len(r) == 0 {
			schemes[""] = true // {} makes the credentials optional
		}
		for name := range r {
			schemes[name] = true
		}
	}
	switch {
	case len(list) == 0:
		return public, nil
	case len(schemes) == 1 && schemes["bearerAuth"]:
		return bearer, nil
	case len(schemes) == 2 && schemes["bearerAuth"] && schemes["runnerSecret"]:
		// A user's route the runners' operator may also call with the runner secret, which
		// routeOpts.operator checks before the user's chain: to a request without it, bearer.
		return bearer, nil
	case len(schemes) == 2 && schemes["bearerAuth"] && schemes["apiKeyAuth"]:
		return bearerOrKey, nil
	}
	return 0, fmt.Errorf("security %v matches none of: [] (public), bearerAuth, bearerAuth or apiKeyAuth, bearerAuth or runnerSecret", sec)
}

func accessName(a access) string {
	switch a {
	case public:
		return "public (security: [])"
	case bearer:
		return "bearer only (security: bearerAuth)"
	case bearerOrKey:
		return "bearer or API key (security: bearerAuth, apiKeyAuth)"
	}
	return "unknown"
}

// routePattern is one registered pattern, split.
type routePattern struct {
	raw    string
	method string // "" for a mounted handler
	path   string // in the document's spelling
}

var (
	restWildcard = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\.\.\.\}`)
	pathParam    = regexp.MustCompile(`\{([^{}]+)\}`)
)

func parsePattern(p string) routePattern {
	method, path, found := strings.Cut(p, " ")
	if !found {
		method, path = "", p
	}
	path = strings.TrimSpace(path)
	path = restWildcard.ReplaceAllString(path, "{$1}")
	path = strings.ReplaceAll(path, "{$}", "")
	return routePattern{raw: p, method: method, path: path}
}

// covers reports whether a mounted handler's pattern serves the document path.
func (r routePattern) covers(path string) bool {
	if strings.HasSuffix(r.path, "/") {
		return strings.HasPrefix(path, r.path)
	}
	return path == r.path
}

// appMounts are the handlers internal/app mounts through Deps.Mounts (see app.New), with
// stand-ins: the patterns are what the document must cover. Keep this in step with app.New;
// this package cannot import internal/app (it imports this one).
var appMounts = []string{"/socket.io/", "/api/runner/"}

// newDocTestServer builds the server with the real identity and billing services over no store
// and no payment provider: the probes below only reach middleware and the services' first
// checks, which answer before any lookup (a malformed API key is refused on its shape, the
// webhook test route reads only the configuration). The limiter is real (in memory) so the
// rate-limit headers of public routes show.
func newDocTestServer() *Server {
	clock := domain.SystemClock
	mounts := map[string]http.Handler{}
	for _, p := range appMounts {
		mounts[p] = http.NotFoundHandler()
	}
	return New(Deps{
		Identity: identity.New(identity.Deps{}),
		Billing:  billing.New(billing.Deps{}),
		Limiter:  ratelimit.NewMemoryLimiter(clock),
		Mounts:   mounts,
		Log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		Version:  "test",
	})
}

func routerPatterns(t *testing.T) []routePattern {
	t.Helper()
	var out []routePattern
	for _, p := range newDocTestServer().Patterns() {
		out = append(out, parsePattern(p))
	}
	if len(out) == 0 {
		t.Fatal("the router registered no patterns")
	}
	return out
}

// TestOpenAPIMatchesRouter fails on a route the document lacks, or an operation no route serves.
func TestOpenAPIMatchesRouter(t *testing.T) {
	doc := loadOpenAPI(t)
	undocumented, unrouted := compareRoutes(routerPatterns(t), doc.operations())
	if len(undocumented) > 0 {
		t.Errorf("routes registered in internal/api but missing from docs/openapi.yaml:\n  %s", strings.Join(undocumented, "\n  "))
	}
	if len(unrouted) > 0 {
		t.Errorf("operations in docs/openapi.yaml that no registered route serves:\n  %s", strings.Join(unrouted, "\n  "))
	}
}

// compareRoutes applies the mapping described at the top of this file.
func compareRoutes(patterns []routePattern, ops []docOperation) (undocumented, unrouted []string) {
	routed := map[string]bool{}
	var mounts []routePattern
	for _, p := range patterns {
		if p.method == "" {
			mounts = append(mounts, p)
			continue
		}
		routed[p.method+" "+p.path] = true
	}
	documented := map[string]bool{}
	for _, o := range ops {
		documented[o.key()] = true
	}
	for _, p := range patterns {
		if p.method != "" {
			if !documented[p.method+" "+p.path] {
				undocumented = append(undocumented, fmt.Sprintf("%s %s (pattern %q)", p.method, p.path, p.raw))
			}
			continue
		}
		if !slices.ContainsFunc(ops, func(o docOperation) bool { return p.covers(o.Path) }) {
			undocumented = append(undocumented, fmt.Sprintf("mounted handler %q: document at least one operation at or under %s", p.raw, p.path))
		}
	}
	for _, o := range ops {
		if routed[o.key()] || (o.Method == "HEAD" && routed["GET "+o.Path]) {
			continue
		}
		if slices.ContainsFunc(mounts, func(m routePattern) bool { return m.covers(o.Path) }) {
			continue
		}
		unrouted = append(unrouted, o.key())
	}
	sort.Strings(undocumented)
	sort.Strings(unrouted)
	return undocumented, unrouted
}

// TestCompareRoutesMapping pins the pattern-to-operation mapping on a made-up router, mounted
// handlers and wildcards included.
func TestCompareRoutesMapping(t *testing.T) {
	var patterns []routePattern
	for _, p := range []string{
		"GET /api/things/{id}",
		"DELETE /api/things/{id}",
		"GET /files/{name...}",
		"GET /{$}",
		"/reports/",
		"/socket.io/",
		"/exact",
	} {
		patterns = append(patterns, parsePattern(p))
	}
	ops := []docOperation{
		{Method: "GET", Path: "/api/things/{id}"},
		{Method: "HEAD", Path: "/api/things/{id}"},            // served by the GET pattern
		{Method: "GET", Path: "/files/{name}"},                // {name...} is written {name}
		{Method: "GET", Path: "/"},                            // {$} is dropped
		{Method: "GET", Path: "/reports/{org}/{task}/{path}"}, // under the mount "/reports/"
		{Method: "GET", Path: "/exact"},
		{Method: "POST", Path: "/api/things/{id}"}, // not routed
		{Method: "GET", Path: "/exact/more"},       // "/exact" is not a subtree
	}
	undocumented, unrouted := compareRoutes(patterns, ops)
	wantUndocumented := []string{
		`DELETE /api/things/{id} (pattern "DELETE /api/things/{id}")`,
		`mounted handler "/socket.io/": document at least one operation at or under /socket.io/`,
	}
	wantUnrouted := []string{"GET /exact/more", "POST /api/things/{id}"}
	if !slices.Equal(undocumented, wantUndocumented) {
		t.Errorf("undocumented = %q, want %q", undocumented, wantUndocumented)
	}
	if !slices.Equal(unrouted, wantUnrouted) {
		t.Errorf("unrouted = %q, want %q", unrouted, wantUnrouted)
	}
}

// TestOpenAPIStructure checks that the document is well formed enough to be relied on.
func TestOpenAPIStructure(t *testing.T) {
	doc := loadOpenAPI(t)
	if v, _ := doc.root["openapi"].(string); !regexp.MustCompile(`^3\.1\.\d+$`).MatchString(v) {
		t.Errorf("openapi: want 3.1.x, got %q", v)
	}
	info := asMap(doc.root["info"])
	if info["title"] == nil || info["version"] == nil {
		t.Error("info.title and info.version are required")
	}
	schemes := asMap(asMap(doc.root["components"])["securitySchemes"])
	for _, name := range []string{"bearerAuth", "apiKeyAuth"} {
		if schemes[name] == nil {
			t.Errorf("components.securitySchemes.%s is missing", name)
		}
	}
	if k := asMap(schemes["apiKeyAuth"]); k != nil && (k["in"] != "header" || !strings.EqualFold(fmt.Sprint(k["name"]), "x-api-key")) {
		t.Errorf("apiKeyAuth: want the x-api-key header, got in=%v name=%v", k["in"], k["name"])
	}
	for _, name := range []string{"Error", "User", "Organization", "Limits", "Invitation", "APIKey", "UsageAlert"} {
		if asMap(asMap(doc.root["components"])["schemas"])[name] == nil {
			t.Errorf("components.schemas.%s is missing", name)
		}
	}

	ops := doc.operations()
	if len(ops) == 0 {
		t.Fatal("the document has no operations")
	}
	ids := map[string]string{}
	responseCode := regexp.MustCompile(`^([1-5]\d\d|[1-5]XX|default)$`)
	for _, o := range ops {
		where := o.key()
		id, _ := o.Op["operationId"].(string)
		switch {
		case id == "":
			t.Errorf("%s: no operationId", where)
		case ids[id] != "":
			t.Errorf("%s: operationId %q is also used by %s", where, id, ids[id])
		default:
			ids[id] = where
		}
		if o.Op["summary"] == nil && o.Op["description"] == nil {
			t.Errorf("%s: no summary or description", where)
		}
		responses := asMap(o.Op["responses"])
		if len(responses) == 0 {
			t.Errorf("%s: no responses", where)
		}
		hasSuccess := false
		for code, r := range responses {
			if !responseCode.MatchString(code) {
				t.Errorf("%s: response key %q is not a status code", where, code)
			}
			if strings.HasPrefix(code, "2") {
				hasSuccess = true
			}
			if rr := doc.deref(r); rr == nil || rr["description"] == nil {
				t.Errorf("%s: response %s has no description", where, code)
			}
		}
		if !hasSuccess {
			t.Errorf("%s: no 2xx response", where)
		}
		if _, err := doc.access(o.Op); err != nil {
			t.Errorf("%s: %v", where, err)
		}
		checkPathParams(t, doc, o)
	}
	checkRefs(t, doc, doc.root, "#")
	checkSecurityNames(t, doc, schemes)
}

// checkPathParams: every {name} of the path is a declared path parameter, and the reverse.
func checkPathParams(t *testing.T, doc *openAPIDoc, o docOperation) {
	t.Helper()
	inPath := map[string]bool{}
	for _, m := range pathParam.FindAllStringSubmatch(o.Path, -1) {
		inPath[m[1]] = true
	}
	declared := map[string]bool{}
	for _, src := range []any{o.Item["parameters"], o.Op["parameters"]} {
		list, _ := src.([]any)
		for _, p := range list {
			pm := doc.deref(p)
			if pm["in"] != "path" {
				continue
			}
			name, _ := pm["name"].(string)
			declared[name] = true
			if pm["required"] != true {
				t.Errorf("%s: path parameter %q must be required: true", o.key(), name)
			}
		}
	}
	for name := range inPath {
		if !declared[name] {
			t.Errorf("%s: path parameter {%s} is not declared in parameters", o.key(), name)
		}
	}
	for name := range declared {
		if !inPath[name] {
			t.Errorf("%s: declares path parameter %q that the path lacks", o.key(), name)
		}
	}
}

// checkRefs resolves every $ref in the document.
func checkRefs(t *testing.T, doc *openAPIDoc, v any, at string) {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		if ref, ok := x["$ref"].(string); ok {
			if _, err := doc.resolve(ref); err != nil {
				t.Errorf("%s: $ref %q does not resolve: %v", at, ref, err)
			}
		}
		for k, e := range x {
			checkRefs(t, doc, e, at+"/"+k)
		}
	case []any:
		for i, e := range x {
			checkRefs(t, doc, e, at+"/"+strconv.Itoa(i))
		}
	}
}

// checkSecurityNames: every security requirement names a declared scheme.
func checkSecurityNames(t *testing.T, doc *openAPIDoc, schemes map[string]any) {
	t.Helper()
	check := func(where string, sec any) {
		list, _ := sec.([]any)
		for _, req := range list {
			for name := range asMap(req) {
				if schemes[name] == nil {
					t.Errorf("%s: security scheme %q is not in components.securitySchemes", where, name)
				}
			}
		}
	}
	check("top-level security", doc.root["security"])
	for _, o := range doc.operations() {
		check(o.key(), o.Op["security"])
	}
}

// probe sends one request through the whole server (middleware included) and returns the
// answer; a handler that does not answer within 5 s fails the test.
func probe(t *testing.T, s *Server, method, path string, header http.Header) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	req.RemoteAddr = "192.0.2.10:4321"
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.ServeHTTP(rec, req)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s %s: no answer within 5s", method, path)
	}
	return rec
}

func errorText(rec *httptest.ResponseRecorder) string {
	var body struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &body)
	return body.Error
}

// TestOpenAPISecurityAndLimitsMatchServer checks each operation's `security` against what the
// server does, and its `x-rate-limit` against the configured buckets:
//   - without credentials, a bearer or bearer-or-key route answers 401 "Authentication
//     required" before any service is reached, and a public route does not;
//   - with a malformed x-api-key, a bearer-only route answers 403 "API key not allowed" and a
//     bearer-or-key route 401 "Invalid API key" (rejected on its shape, before any lookup);
//   - x-rate-limit names a bucket of DefaultRateLimits with its numbers and key, and a public
//     route sends X-RateLimit-Limit exactly when it documents a limit. (Authenticated routes
//     count after authentication, which these service-less probes cannot pass.)
func TestOpenAPISecurityAndLimitsMatchServer(t *testing.T) {
	doc := loadOpenAPI(t)
	s := newDocTestServer()
	byKey := map[string]docOperation{}
	for _, o := range doc.operations() {
		byKey[o.key()] = o
	}
	limits := DefaultRateLimits()
	for _, p := range routerPatterns(t) {
		if p.method == "" {
			continue // mounted handlers bring their own authentication
		}
		o, found := byKey[p.method+" "+p.path]
		if !found {
			continue // reported by TestOpenAPIMatchesRouter
		}
		want, err := doc.access(o.Op)
		if err != nil {
			continue // reported by TestOpenAPIStructure
		}
		url := pathParam.ReplaceAllString(p.path, "x")

		noCreds := probe(t, s, p.method, url, nil)
		needsCreds := noCreds.Code == http.StatusUnauthorized && errorText(noCreds) == "Authentication required"
		switch {
		case want == public && needsCreds:
			t.Errorf("%s: documented as public, but the server asks for credentials", o.key())
		case want != public && !needsCreds:
			t.Errorf("%s: documented as %s, but without credentials the server answered %d %q",
				o.key(), accessName(want), noCreds.Code, errorText(noCreds))
		}
		if want != public && needsCreds {
			keyed := probe(t, s, p.method, url, http.Header{"X-Api-Key": {"not-a-key"}})
			got := errorText(keyed)
			switch {
			case keyed.Code == http.StatusForbidden && got == "API key not allowed":
				if want != bearer {
					t.Errorf("%s: documented as %s, but the server refuses API keys (bearer only)", o.key(), accessName(want))
				}
			case keyed.Code == http.StatusUnauthorized && got == "Invalid API key":
				if want != bearerOrKey {
					t.Errorf("%s: documented as %s, but the server accepts API keys", o.key(), accessName(want))
				}
			default:
				t.Errorf("%s: with a malformed x-api-key the server answered %d %q; want 403 \"API key not allowed\" or 401 \"Invalid API key\"",
					o.key(), keyed.Code, got)
			}
		}

		rl := asMap(o.Op["x-rate-limit"])
		if rl != nil {
			bucket, _ := rl["bucket"].(string)
			rule, ok := limits[bucket]
			if !ok {
				t.Errorf("%s: x-rate-limit bucket %q is not in DefaultRateLimits", o.key(), bucket)
			} else {
				wantKey := map[limitKey]string{byIP: "ip", byOrg: "organization"}[rule.Key]
				if fmt.Sprint(rl["limit"]) != strconv.Itoa(rule.Limit) ||
					fmt.Sprint(rl["windowSeconds"]) != strconv.Itoa(int(rule.Window/time.Second)) || rl["key"] != wantKey {
					t.Errorf("%s: x-rate-limit says %v; bucket %q is limit %d, windowSeconds %d, key %s",
						o.key(), rl, bucket, rule.Limit, int(rule.Window/time.Second), wantKey)
				}
			}
		}
		if want == public {
			header := noCreds.Header().Get("X-RateLimit-Limit")
			switch {
			case rl == nil && header != "":
				t.Errorf("%s: the server rate-limits it (X-RateLimit-Limit %s) but the document has no x-rate-limit", o.key(), header)
			case rl != nil && header != fmt.Sprint(rl["limit"]):
				t.Errorf("%s: x-rate-limit limit %v, but the server sent X-RateLimit-Limit %q", o.key(), rl["limit"], header)
			}
		}
	}
}

// lenientBodies are the operations whose JSON body is not the API's own: the payment
// provider's webhook and the source-control hosts' deliveries take their events as they are,
// fields unknown to Verdict included.
var lenientBodies = map[string]bool{"POST /api/webhooks/stripe": true, "POST /api/hooks/{provider}/{hookId}": true}

// TestOpenAPIRequestBodiesStrict: the server refuses unknown fields in every JSON body but the
// lenient ones, so every object of those request schemas must say additionalProperties: false
// (maps of the client's own names say additionalProperties: {schema}, without properties),
// and their 400 answer must show the shared UnknownField example.
func TestOpenAPIRequestBodiesStrict(t *testing.T) {
	doc := loadOpenAPI(t)
	checked := 0
	for _, o := range doc.operations() {
		body := doc.deref(o.Op["requestBody"])
		schema := asMap(asMap(body["content"])["application/json"])["schema"]
		if schema == nil || lenientBodies[o.key()] {
			continue
		}
		checked++
		for _, p := range strictSchemaProblems(doc, schema, "requestBody", 0) {
			t.Errorf("%s: %s", o.key(), p)
		}
		bad := doc.deref(asMap(o.Op["responses"])["400"])
		examples := asMap(asMap(asMap(bad["content"])["application/json"])["examples"])
		if !slices.ContainsFunc(slices.Collect(maps.Values(examples)), func(e any) bool {
			return asMap(e)["$ref"] == "#/components/examples/UnknownField"
		}) {
			t.Errorf("%s: its 400 answer does not show {$ref: '#/components/examples/UnknownField'}", o.key())
		}
	}
	if checked == 0 {
		t.Fatal("no operation with a JSON request body was checked")
	}
}

// strictSchemaProblems lists the objects of schema that do not refuse unknown members.
func strictSchemaProblems(doc *openAPIDoc, v any, at string, depth int) []string {
	m := asMap(v)
	if ref, ok := m["$ref"].(string); ok {
		at += " (" + ref + ")"
		m = doc.deref(m)
	}
	if m == nil || depth > 20 {
		return nil
	}
	var out []string
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		list, _ := m[k].([]any)
		for i, sub := range list {
			out = append(out, strictSchemaProblems(doc, sub, fmt.Sprintf("%s/%s/%d", at, k, i), depth+1)...)
		}
	}
	types, _ := m["type"].([]any)
	object := m["type"] == "object" || slices.Contains(types, any("object")) || m["properties"] != nil
	props := asMap(m["properties"])
	switch ap := m["additionalProperties"]; {
	case !object:
	case ap == false:
		for _, name := range slices.Sorted(maps.Keys(props)) {
			out = append(out, strictSchemaProblems(doc, props[name], at+"/properties/"+name, depth+1)...)
		}
	case asMap(ap) != nil && props == nil:
		out = append(out, strictSchemaProblems(doc, ap, at+"/additionalProperties", depth+1)...)
	default:
		out = append(out, at+": an object of a request body must say additionalProperties: false (or, for a map of the client's own names, additionalProperties: {schema} without properties)")
	}
	if items := m["items"]; items != nil {
		out = append(out, strictSchemaProblems(doc, items, at+"/items", depth+1)...)
	}
	return out
}

// TestStrictSchemaProblems pins the check on made-up schemas.
func TestStrictSchemaProblems(t *testing.T) {
	var raw any
	if err := yaml.Unmarshal([]byte(`
components:
  schemas:
    Open: {type: object, properties: {a: {type: string}}}
    Closed: {type: object, additionalProperties: false, properties: {a: {type: string}}}
body:
  allOf:
    - {$ref: '#/components/schemas/Closed'}
    - {required: [a]}
    - {$ref: '#/components/schemas/Open'}
  type: object
  additionalProperties: false
  properties:
    nested: {type: object, properties: {x: {type: integer}}}
    list: {type: array, items: {type: object, additionalProperties: false, properties: {y: {type: object}}}}
    vars: {type: object, additionalProperties: {type: string}}
    half: {type: object, properties: {k: {type: string}}, additionalProperties: {type: string}}
    fine: {type: [object, 'null'], additionalProperties: false}
`), &raw); err != nil {
		t.Fatal(err)
	}
	doc := &openAPIDoc{root: normalizeYAML(raw).(map[string]any)}
	got := strictSchemaProblems(doc, doc.root["body"], "b", 0)
	for i, p := range got {
		got[i], _, _ = strings.Cut(p, ":")
	}
	want := []string{
		"b/allOf/2 (#/components/schemas/Open)",
		"b/properties/half",
		"b/properties/list/items/properties/y",
		"b/properties/nested",
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems %q, want %q", got, want)
	}
}
