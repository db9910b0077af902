// Package auth holds the credentials of the service: password hashes, session tokens (JWT),
// API keys, invitation tokens, and the failed-login lockout.
package auth

import "golang.org/x/crypto/bcrypt"

// PasswordCost is the bcrypt cost of stored password hashes.
const PasswordCost = 10

// dummyHash is a cost-10 bcrypt hash of a random, forgotten password. DummyCheck compares
// against it so an unknown e-mail costs exactly what a wrong password costs.
const dummyHash = "$2a$10$7IgFtTTy03hNzQnAEA.IY.OMi3Uy1JReilOBlfMiv7yOv4XsqPkUe"

// HashPassword returns the bcrypt hash of password. Passwords over 72 bytes are refused
// (bcrypt would silently ignore the rest).
func HashPassword(password string) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(password), PasswordCost)
	if err != nil {
		return "", err
	}
	return string(h), nil
}

// CheckPassword reports whether password matches hash. bcrypt's comparison is constant-time.
func CheckPassword(hash, password string) bool {
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) == nil
}

// DummyCheck spends the time of one CheckPassword, for a login whose e-mail is unknown, so
// response timing does not reveal which e-mails have accounts.
func DummyCheck(password string) {
	_ = bcrypt.CompareHashAndPassword([]byte(dummyHash), []byte(password))
}
