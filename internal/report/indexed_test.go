package report

import (
	"bytes"
	"context"
	"slices"
	"testing"
)

// IndexedDirs names the folders a link can open: those with an index.html of their own.
func TestIndexedDirs(t *testing.T) {
	forEachStore(t, func(t *testing.T, s testStore) {
		ctx := context.Background()
		for into, entries := range map[string][]entry{
			"playwright-report": {{name: "x/index.html", body: "<html>"}, {name: "x/data/a.png", body: "png"}},
			"junit":             {{name: "x/results.xml", body: "<testsuites/>"}},
			"nested":            {{name: "x/sub/index.html", body: "<html>"}},
			"index-folder":      {{name: "x/index.html/", typ: '5'}},
		} {
			if _, err := s.Put(ctx, org, task, bytes.NewReader(tarOf(t, entries...)), into, 1<<20); err != nil {
				t.Fatal(err)
			}
		}
		got := IndexedDirs(ctx, s, org, task, []string{"junit", "playwright-report", "nested", "index-folder", "missing"})
		if !slices.Equal(got, []string{"playwright-report"}) {
			t.Errorf("IndexedDirs = %q, want only playwright-report", got)
		}
		if got := IndexedDirs(ctx, s, org, task, nil); got == nil || len(got) != 0 {
			t.Errorf("no folders: %#v, want an empty, non-nil list (recorded: none)", got)
		}
	})
}
