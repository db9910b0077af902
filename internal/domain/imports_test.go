package domain

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The domain knows no transport: an Error carries a Kind, and each front door answers it with
// a status of its own (internal/httpkind). Package domain (its code, not its tests) imports
// nothing of HTTP, and no Verdict package.
func TestDomainImportsNoTransport(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		seen++
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			if path == "net/http" || strings.HasPrefix(path, "net/http/") || strings.HasPrefix(path, "verdict/") {
				t.Errorf("%s imports %s: the domain's rules and errors know no transport and no other package", name, path)
			}
		}
	}
	if seen == 0 {
		t.Fatal("no Go files found in package domain")
	}
}
