package auth

import (
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

func TestPasswords(t *testing.T) {
	h, err := HashPassword("Secr3t!pass")
	if err != nil {
		t.Fatal(err)
	}
	if cost, err := bcrypt.Cost([]byte(h)); err != nil || cost != PasswordCost {
		t.Fatalf("cost = %d, %v; want %d", cost, err, PasswordCost)
	}
	if !CheckPassword(h, "Secr3t!pass") {
		t.Fatal("right password refused")
	}
	for _, wrong := range []string{"", "secr3t!pass", "Secr3t!pass ", "Secr3t!pas"} {
		if CheckPassword(h, wrong) {
			t.Errorf("wrong password %q accepted", wrong)
		}
	}
	if CheckPassword("not a hash", "Secr3t!pass") {
		t.Fatal("malformed hash accepted")
	}
	if _, err := HashPassword(strings.Repeat("a", 73)); err == nil {
		t.Fatal("a 73-byte password was hashed")
	}
}

// The dummy hash must cost what real hashes cost, or DummyCheck's timing would differ.
func TestDummyHashCost(t *testing.T) {
	if cost, err := bcrypt.Cost([]byte(dummyHash)); err != nil || cost != PasswordCost {
		t.Fatalf("dummy hash cost = %d, %v; want %d", cost, err, PasswordCost)
	}
	DummyCheck("anything")
}
