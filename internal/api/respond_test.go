package api

import (
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"verdict/internal/domain"
)

// strictBody is shaped like the API's request bodies: plain fields, a nested object, a list
// of objects and an open map.
type strictBody struct {
	Name     string `json:"name"`
	Count    *int   `json:"count"`
	Features *struct {
		Planner *bool `json:"automationPlanner"`
	} `json:"aiFeatures"`
	EnvVars []domain.EnvVar   `json:"envVars"`
	Vars    map[string]string `json:"vars"`
	Groups  [][]domain.EnvVar `json:"groups"`
}

func decodeBody(body string, v any) *domain.Error {
	r := httptest.NewRequest("POST", "/x", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	return decode(httptest.NewRecorder(), r, v)
}

func TestDecodeRefusesUnknownFields(t *testing.T) {
	for _, c := range []struct{ body, code, msg string }{
		{`{"name":"a","base_url":"x"}`, "Invalid request", `Unknown field "base_url"`},
		{`{"base_url":{"deep":[1,{"x":2}]},"name":"a"}`, "Invalid request", `Unknown field "base_url"`},
		{`{"aiFeatures":{"automationPlaner":true}}`, "Invalid request", `Unknown field "aiFeatures.automationPlaner"`},
		{`{"envVars":[{"key":"A","value":"b"},{"key":"B","secrett":true}]}`, "Invalid request", `Unknown field "envVars[1].secrett"`},
		{`{"groups":[[],[{"key":"A"},{"kee":"B"}]]}`, "Invalid request", `Unknown field "groups[1][1].kee"`},
		// Members before the unknown one, of every shape, are walked over.
		{`{"vars":{"x":"{"},"envVars":null,"aiFeatures":null,"count":1,"groups":[[{"key":"[","value":"}"}]],"extra":1}`, "Invalid request", `Unknown field "extra"`},
		{`{"name":"a","Name\u0000":"b"}`, "Invalid request", `Unknown field "Name\x00"`},
		{`{"` + strings.Repeat("k", 300) + `":1}`, "Invalid request", `Unknown field "` + strings.Repeat("k", 200) + `…"`},
		// Other failures keep their answers.
		{`{"name":1}`, "Validation error", `Field "name" must be of type string`},
		{`{"aiFeatures":{"automationPlanner":"on"}}`, "Validation error", `Field "aiFeatures.automationPlanner" must be of type boolean`},
		{`{"name":`, "Invalid JSON", "The request body is not valid JSON"},
		{`[1]`, "Invalid JSON", "The body must be a JSON object"},
		{``, "Invalid JSON", "The request body is empty; send a JSON object"},
		{`{"name":"a"} {}`, "Invalid JSON", "The body must hold exactly one JSON object"},
		{`{"name":"a"} {"x":1}`, "Invalid JSON", "The body must hold exactly one JSON object"},
	} {
		var v strictBody
		err := decodeBody(c.body, &v)
		if err == nil || statusOf(err) != 400 || err.Code != c.code || err.Message != c.msg {
			t.Errorf("decode(%.60q) = %+v; want 400 %q %q", c.body, err, c.code, c.msg)
		}
	}
}

func TestDecodeAcceptsKnownFields(t *testing.T) {
	var v strictBody
	// Open maps take any key.
	body := `{"name":"a","count":null,"aiFeatures":{"automationPlanner":true},"envVars":[{"key":"A","value":"1","secret":true}],"vars":{"base_url":"x","any thing":"y"}}`
	if err := decodeBody(body, &v); err != nil {
		t.Fatalf("decode: %+v", err)
	}
	if v.Name != "a" || *v.Features.Planner != true || len(v.EnvVars) != 1 || v.Vars["base_url"] != "x" {
		t.Fatalf("decoded %+v", v)
	}
	if err := decodeBody(`null`, &v); err != nil {
		t.Fatalf("decode null: %+v", err)
	}
}

// Names match exactly, unlike encoding/json's matching that ignores case.
func TestDecodeMatchesNamesExactly(t *testing.T) {
	for body, path := range map[string]string{
		`{"name":"a","NAME":"b"}`:                     "NAME",
		`{"Name":"a"}`:                                "Name",
		`{"aiFeatures":{"AutomationPlanner":true}}`:   "aiFeatures.AutomationPlanner",
		`{"envVars":[{"Key":"A"}],"nmae":1}`:          "envVars[0].Key",
		`{"envVars":[{"key":"A"}],"aifeatures":null}`: "aifeatures",
	} {
		var v strictBody
		err := decodeBody(body, &v)
		if want := `Unknown field "` + path + `"`; err == nil || err.Code != "Invalid request" || err.Message != want {
			t.Errorf("decode(%s) = %+v; want Invalid request %q", body, err, want)
		}
	}
}

func TestFirstUnknown(t *testing.T) {
	typ := reflect.TypeOf(&strictBody{})
	for _, c := range []struct{ body, want string }{
		{`{"envVars":[{"key":"A","x":1}]}`, "envVars[0].x"},
		// A value of another type than the field's is walked over.
		{`{"aiFeatures":[1,{"a":[]}],"envVars":{"k":{}},"name":{"x":1},"y":1}`, "y"},
		{`{"vars":{"a":"b"},"groups":[[{"key":"A"}],[{"value":"v","k":1}]]}`, "groups[1][0].k"},
		{`{"name":"x"}`, ""},
		{`null`, ""},
	} {
		got, found := firstUnknown(json.NewDecoder(strings.NewReader(c.body)), typ, "")
		if got != c.want || found != (c.want != "") {
			t.Errorf("firstUnknown(%s) = %q, %v; want %q", c.body, got, found, c.want)
		}
	}
}

func TestDecodeProjectTargetURLKeys(t *testing.T) {
	for _, c := range []struct{ body, msg string }{
		{`{"targetUrls":{"staging":"http://s","qa":"http://q","dev":"x"}}`, `Unknown field "targetUrls.dev"`},
		{`{"targetUrls":{"Staging":"http://s"}}`, `Unknown field "targetUrls.Staging"`},
		{`{"envVars":[{"key":"A","value":"b","secret":false,"note":"x"}]}`, `Unknown field "envVars[0].note"`},
		{`{"name":"p","command":"npm test"}`, `Unknown field "command"`},
	} {
		r := httptest.NewRequest("POST", "/api/projects", strings.NewReader(c.body))
		_, err := decodeProject(httptest.NewRecorder(), r)
		if err == nil || err.Code != "Invalid request" || err.Message != c.msg {
			t.Errorf("decodeProject(%s) = %+v; want Invalid request %q", c.body, err, c.msg)
		}
	}
	r := httptest.NewRequest("POST", "/api/projects", strings.NewReader(`{"targetUrls":{"development":"","staging":"http://s","production":"https://p"}}`))
	in, err := decodeProject(httptest.NewRecorder(), r)
	if err != nil || len(in.TargetURLs) != 3 {
		t.Fatalf("decodeProject = %+v, %+v", in, err)
	}
}
