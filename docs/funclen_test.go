package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines bounds a production function (cmd and internal; the tools under tools/ are
// benchmark and chaos drivers): one that outgrows it does several things, which
// belong in functions of their own. Route tables are declarative and exempt.
const maxFuncLines = 100

var longFuncsAllowed = map[string]bool{"api.routes": true, "web.routes": true}

func TestNoLongFunctions(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, top := range []string{"cmd", "internal"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(p string, d os.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.IsDir() && (d.Name() == "testdata" || d.Name() == "storetest"):
				return filepath.SkipDir // data; the store's contract, for tests
			case d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go"):
				return nil
			}
			f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
				if name := f.Name.Name + "." + fn.Name.Name; lines > maxFuncLines && !longFuncsAllowed[name] {
					rel, _ := filepath.Rel(root, p)
					t.Errorf("%s: %s is %d lines, over %d: split it", rel, name, lines, maxFuncLines)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
