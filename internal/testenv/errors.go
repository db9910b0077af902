package testenv

import (
	"errors"
	"strings"
	"testing"

	"verdict/internal/domain"
	"verdict/internal/httpkind"
)

// WantError fails the test unless err is the API error a client would get: status (its kind's,
// as the API answers it), code (the
// body's error) and a message containing msg ("" checks only status and code). It returns the
// error for a look at its extra body fields.
func WantError(t testing.TB, err error, status int, code, msg string) *domain.Error {
	t.Helper()
	var de *domain.Error
	if !errors.As(err, &de) {
		t.Fatalf("got %v, want %d %s: %s", err, status, code, msg)
	}
	if got := httpkind.Status(de.Kind); got != status || de.Code != code || !strings.Contains(de.Message, msg) {
		t.Fatalf("got %d %s: %s, want %d %s: …%s…", got, de.Code, de.Message, status, code, msg)
	}
	return de
}
