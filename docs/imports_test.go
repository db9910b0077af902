package docs

import (
	"go/build"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The import table of architecture.md is the real graph: each row names a package and every
// Verdict package it imports (test files aside), and every package of the module has its row.
func TestArchitectureImportTable(t *testing.T) {
	table := importTable(t)
	if len(table) < 20 {
		t.Fatalf("architecture.md's import table has only %d rows", len(table))
	}
	real := moduleImports(t)
	for pkg, imports := range real {
		documented, ok := table[pkg]
		if !ok {
			t.Errorf("architecture.md has no row for %s (it imports %s)", pkg, show(imports))
			continue
		}
		if !slices.Equal(documented, imports) {
			t.Errorf("architecture.md says %s imports %s; it imports %s", pkg, show(documented), show(imports))
		}
	}
	for pkg := range table {
		if _, ok := real[pkg]; !ok {
			t.Errorf("architecture.md has a row for %s, which is not a package of the module", pkg)
		}
	}
}

func show(imports []string) string {
	if len(imports) == 0 {
		return "—"
	}
	return strings.Join(imports, ", ")
}

// importTable reads the table under "Packages and what each may import": package → its
// internal imports as written (ai/models, run/engines, docs), sorted.
func importTable(t *testing.T) map[string][]string {
	body, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(body), "## Packages and what each may import")
	if !ok {
		t.Fatal(`architecture.md has no section "Packages and what each may import"`)
	}
	table := map[string][]string{}
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "## ") || strings.HasPrefix(line, "### ") {
			break
		}
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		pkg := strings.Trim(strings.TrimSpace(cells[1]), "`")
		var imports []string
		for _, imp := range strings.Split(cells[len(cells)-2], ",") {
			imp, _, _ = strings.Cut(imp, " (") // a note on why: "run (its container labels)"
			imp = strings.Trim(strings.TrimSpace(imp), "`")
			if imp != "" && imp != "—" {
				imports = append(imports, imp)
			}
		}
		slices.Sort(imports)
		table[strings.TrimPrefix(pkg, "internal/")] = imports
	}
	return table
}

// moduleImports lists every non-test package of the module under cmd/, internal/, tools/ and docs/
// with its imports of the module's packages, named as the table names them.
func moduleImports(t *testing.T) map[string][]string {
	const module = "verdict/"
	name := func(path string) string {
		return strings.TrimPrefix(strings.TrimPrefix(path, module), "internal/")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	graph := map[string][]string{}
	for _, top := range []string{"cmd", "internal", "tools", "docs"} {
		top = filepath.Join(root, top)
		err := filepath.WalkDir(top, func(dir string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				return filepath.SkipDir // a module of its own (tools/kube)
			}
			p, err := build.ImportDir(dir, 0)
			if err != nil {
				if _, none := err.(*build.NoGoError); none {
					return nil
				}
				return err
			}
			var imports []string
			for _, imp := range p.Imports {
				if strings.HasPrefix(imp, module) {
					imports = append(imports, name(imp))
				}
			}
			slices.Sort(imports)
			rel, _ := filepath.Rel(root, dir)
			graph[name(module+filepath.ToSlash(rel))] = imports
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return graph
}
