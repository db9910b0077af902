package api

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"verdict/internal/domain"
	"verdict/internal/executions"
	"verdict/internal/store"
)

// checkedFilter is what GET /api/executions makes of a query: the route's parse, then the
// executions service's check, as the route and the dashboard's /runs run it.
func checkedFilter(raw string) (store.ExecutionFilter, error, bool) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return store.ExecutionFilter{}, nil, false
	}
	f, err := parseExecutionFilter(q)
	if err == nil {
		err = executions.CheckFilter(&f)
	}
	return f, err, true
}

// maxFilterText bounds the text of an accepted filter: a project ID, an image reference, 20
// labels and the 8 statuses (what keys the store's page cache).
const maxFilterText = 24 + 512 + domain.MaxLabels*(domain.MaxLabelKeyLen+1+domain.MaxLabelValueLen*utf8.UTFMax) + 8*10

// FuzzExecutionFilter: whatever the query, the run list's filter is either refused with a
// 400 `Validation error` whose message stays short (it names the filter, never repeats it
// whole), or accepted with every part within the bounds of what a run holds.
func FuzzExecutionFilter(f *testing.F) {
	long := strings.Repeat("x", 900<<10)
	for _, seed := range []string{
		"",
		"limit=10&offset=5&status=failed,ERROR&projectId=0123456789abcdef01234567&image=suite:1&label=branch:main",
		"status=FAILED,failed,%20Failed%20,ERROR",
		"status=" + strings.Repeat("FAILED,", 20000) + "PASSED",
		"status=DONE",
		"projectId=abc",
		"projectId=0123456789ABCDEF01234567",
		"projectId=" + long,
		"image=" + long,
		"image=registry.example.com:5000/team/suite@sha256:" + strings.Repeat("a", 64),
		"image=Upper/Case",
		"image=%00",
		"image=a%20b",
		"label=a:b&label=" + long,
		"label=" + strings.Repeat("k", 64) + ":v",
		strings.Repeat("label=a:b&", 21),
		"limit=0", "limit=101", "offset=-1", "limit=1e3",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		fl, err, parsed := checkedFilter(raw)
		if !parsed {
			return
		}
		if err != nil {
			var de *domain.Error
			if !errors.As(err, &de) || statusOf(de) != 400 || de.Code != "Validation error" || de.Message == "" || len(de.Message) > 400 {
				t.Fatalf("query %.200q refused with %v, want a short 400 Validation error", raw, err)
			}
			return
		}
		if fl.Limit < 1 || fl.Limit > 100 || fl.Offset < 0 {
			t.Fatalf("query %.200q: limit %d, offset %d", raw, fl.Limit, fl.Offset)
		}
		text := len(fl.ProjectID) + len(fl.Image)
		seen := map[domain.ExecStatus]bool{}
		for _, st := range fl.Statuses {
			if !st.Valid() || seen[st] {
				t.Fatalf("query %.200q: statuses %q", raw, fl.Statuses)
			}
			seen[st] = true
			text += len(st) + 1
		}
		if fl.ProjectID != "" && !domain.IsObjectID(fl.ProjectID) {
			t.Fatalf("query %.200q: project %q", raw, fl.ProjectID)
		}
		if fl.Image != "" && (len(fl.Image) > 512 || !domain.ValidImage(fl.Image)) {
			t.Fatalf("query %.200q: image %.100q", raw, fl.Image)
		}
		if len(fl.Labels) > domain.MaxLabels {
			t.Fatalf("query %.200q: %d labels", raw, len(fl.Labels))
		}
		for _, l := range fl.Labels {
			if !domain.ValidLabelKey(l.Key) || !utf8.ValidString(l.Value) || utf8.RuneCountInString(l.Value) > domain.MaxLabelValueLen {
				t.Fatalf("query %.200q: label %q", raw, l)
			}
			text += len(l.Key) + 1 + len(l.Value)
		}
		if text > maxFilterText {
			t.Fatalf("query %.200q: an accepted filter of %d bytes, want at most %d", raw, text, maxFilterText)
		}
	})
}

// The filters refused before the store sees them, with the texts the route answers.
func TestExecutionFilterRefusals(t *testing.T) {
	for raw, want := range map[string]string{
		"projectId=abc": `projectId filter "abc" is not a project ID (24 hexadecimal characters)`,
		"projectId=" + strings.Repeat("a", 900<<10): `projectId filter "` + strings.Repeat("a", 64) + `…" is not a project ID (24 hexadecimal characters)`,
		"image=" + strings.Repeat("a", 513):         `image filter "` + strings.Repeat("a", 64) + `…" is not a valid image reference (at most 512 characters)`,
		"image=Not%20An%20Image":                    `image filter "Not An Image" is not a valid image reference (at most 512 characters)`,
		"status=FAILED,DONE":                        `unknown status "DONE"`,
		strings.Repeat("label=a:b&", 21):            `at most 20 label filters`,
	} {
		_, err, _ := checkedFilter(raw)
		var de *domain.Error
		if !errors.As(err, &de) || statusOf(de) != 400 || de.Code != "Validation error" || de.Message != want {
			t.Errorf("query %.80q: %v, want 400 Validation error %q", raw, err, want)
		}
	}
	fl, err, _ := checkedFilter("status=failed,FAILED,%20Failed,error&projectId=0123456789abcdef01234567&image=suite:1")
	if err != nil || len(fl.Statuses) != 2 || fl.Statuses[0] != domain.ExecFailed || fl.Statuses[1] != domain.ExecError {
		t.Fatalf("a good filter: %+v, %v", fl, err)
	}
}
