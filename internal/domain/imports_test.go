package domain_test

import (
	"strings"
	"testing"

	"verdict/internal/testenv"
)

// The domain knows no transport: an Error carries a Kind, and each front door answers it with
// a status of its own (internal/httpkind). Package domain (its code, not its tests) imports
// nothing of HTTP, and no Verdict package.
func TestDomainImportsNoTransport(t *testing.T) {
	for name, imports := range testenv.SourceImports(t, ".") {
		for _, path := range imports {
			if path == "net/http" || strings.HasPrefix(path, "net/http/") || strings.HasPrefix(path, "verdict/") {
				t.Errorf("%s imports %s: the domain's rules and errors know no transport and no other package", name, path)
			}
		}
	}
}
