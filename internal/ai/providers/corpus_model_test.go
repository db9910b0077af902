package providers

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"verdict/internal/ai"
	"verdict/internal/ai/analyzer"
	"verdict/internal/ai/models"
)

// corpusRun is a case of the analyser's corpus of real failures
// (internal/ai/analyzer/testdata/real), read here for the model path.
type corpusRun struct {
	ID        string           `json:"id"`
	Framework string           `json:"framework"`
	Expected  ai.Category      `json:"expected"`
	BaseURL   string           `json:"baseUrl"`
	ExitCode  *int             `json:"exitCode"`
	RunError  string           `json:"runError"`
	Log       string           `json:"log"`
	History   analyzer.History `json:"history"`
	Tests     []analyzer.Test  `json:"tests"`
}

// corpusHeldOut is the corpus's held-out rule (heldOut in the analyser's realcorpus_test.go):
// two in five cases by the FNV-1a hash of the id.
func corpusHeldOut(id string) bool {
	h := fnv.New32a()
	h.Write([]byte(id))
	return h.Sum32()%5 < 2
}

// echoModel is a model on the wire (OpenAI's chat completions) that answers each analysis
// with the built-in category the evidence carries: what reaches the model and what comes back
// go through the real client, request and answer, with no model's judgement in between.
func echoModel(t *testing.T) *fake {
	openai := wires[0]
	var f *fake
	f = newFake(t, func(w http.ResponseWriter, r *http.Request) {
		// The fake has read and recorded the request; the model reads what it recorded.
		reqs := f.requests()
		user := readSent(t, openai, reqs[len(reqs)-1]).user
		var ev struct {
			Builtin ai.Finding `json:"builtin"`
		}
		if i := strings.IndexByte(user, '{'); i < 0 || json.Unmarshal([]byte(user[i:]), &ev) != nil {
			reply(400, openai.apiError(400, "no evidence"))(w, r)
			return
		}
		answer, _ := json.Marshal(ai.Finding{Category: ev.Builtin.Category, Summary: "echo: " + ev.Builtin.Summary,
			RootCause: "echo", SuggestedFix: "echo", Confidence: ev.Builtin.Confidence})
		reply(200, openai.answer(string(answer)))(w, r)
	})
	return f
}

// TestModelPathOnTheCorpus runs the held-out part of the corpus of real failures through the
// model path (the evidence the analyser builds, the provider client, a model on the wire) and
// checks every answer arrives, as a finding of a valid category, and agrees with the built-in
// one it was given. It prints both figures: the model's (here an echo: the plumbing proven)
// and the built-in analyser's.
func TestModelPathOnTheCorpus(t *testing.T) {
	files, _ := filepath.Glob("../analyzer/testdata/real/*.json")
	if len(files) == 0 {
		t.Fatal("no corpus")
	}
	var cases []corpusRun
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cs []corpusRun
		if err := json.Unmarshal(data, &cs); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		cases = append(cases, cs...)
	}
	f := echoModel(t)
	client := New(Config{BaseURL: map[models.Provider]string{models.OpenAI: f.URL + "/v1"}, Timeout: 10 * time.Second})
	type tally struct{ right, total int }
	builtinBy, modelBy := map[ai.Category]*tally{}, map[ai.Category]*tally{}
	agree, n := 0, 0
	for _, c := range cases {
		if !corpusHeldOut(c.ID) {
			continue
		}
		res := analyzer.Analyse(analyzer.Input{TaskID: "run-" + c.ID, BaseURL: c.BaseURL, ExitCode: c.ExitCode, RunError: c.RunError, Tests: c.Tests, Log: c.Log}, c.History, nil)
		evidence, err := json.Marshal(res.Evidence)
		if err != nil {
			t.Fatal(err)
		}
		got, err := client.Analyse(context.Background(), models.OpenAI, "gpt-5.4-mini", testKey, evidence)
		if err != nil {
			t.Fatalf("%s: the model path failed: %v", c.ID, err)
		}
		if !got.Category.Valid() || got.Category != res.Category {
			t.Errorf("%s: the model answered %q for the built-in %q it was given", c.ID, got.Category, res.Category)
		}
		n++
		if got.Category == res.Category {
			agree++
		}
		for _, m := range []struct {
			by  map[ai.Category]*tally
			cat ai.Category
		}{{builtinBy, res.Category}, {modelBy, got.Category}} {
			if m.by[c.Expected] == nil {
				m.by[c.Expected] = &tally{}
			}
			m.by[c.Expected].total++
			if m.cat == c.Expected {
				m.by[c.Expected].right++
			}
		}
	}
	if len(f.requests()) != n || n == 0 {
		t.Fatalf("%d cases, %d requests on the wire", n, len(f.requests()))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "model path on the held-out corpus: %d runs sent over the wire, %d answers, agreement with the built-in category %.1f%%\n", n, n, 100*float64(agree)/float64(n))
	labels := make([]string, 0, len(builtinBy))
	for c := range builtinBy {
		labels = append(labels, string(c))
	}
	sort.Strings(labels)
	for _, l := range labels {
		bt, mt := builtinBy[ai.Category(l)], modelBy[ai.Category(l)]
		fmt.Fprintf(&b, "  %-12s built-in %3d/%-3d  model %3d/%-3d\n", l, bt.right, bt.total, mt.right, mt.total)
	}
	t.Log("\n" + b.String())
}
