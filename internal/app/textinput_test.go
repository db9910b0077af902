//go:build integration

package app_test

import (
	"testing"
)

// Names refuse characters that hide or reorder text, and e-mail addresses are normalised
// (NFKC) and refuse invisible characters and mixed-script look-alikes; the errors are the
// routes' usual ones for a bad name or e-mail.
func TestSignupRefusesInvisibleAndLookAlikeCharacters(t *testing.T) {
	forEachDB(t, func(t *testing.T, h *harness) {
		signup := func(email, name, org string) resp {
			t.Helper()
			return h.do("POST", "/api/auth/signup", anon, map[string]any{"email": email, "password": password, "name": name, "organizationName": org})
		}

		// Names: a bidi override shows "Eve ADMIN"; CR/LF would reach plain-text mails.
		expect(t, signup("eve@example.com", "Eve \u202eNIMDA", "Eve Co"), 400, "Missing required fields")
		expect(t, signup("eve@example.com", "Eve\r\nBcc: all@example.com", "Eve Co"), 400, "Missing required fields")
		expect(t, signup("eve@example.com", "E\u200bve", "Eve Co"), 400, "Missing required fields")
		expect(t, signup("eve@example.com", "Eve", "Eve Co\r\nBcc: all@example.com"), 400, "Invalid organization name")
		expect(t, signup("eve@example.com", "Eve", "Eve \u2066Co\u2069"), 400, "Invalid organization name")

		// E-mail addresses: zero-width space, a Cyrillic "а" among Latin letters, a Cyrillic
		// local part on a Latin domain.
		for _, email := range []string{"e\u200bve@example.com", "\u0430da@example.com", "ada@ex\u0430mple.com", "\u0438\u0432\u0430\u043d@example.com", "eve\u202e@example.com"} {
			expect(t, signup(email, "Eve", "Eve Co"), 400, "Invalid email format")
		}

		// Full-width letters are normalised to ASCII: the account is eve@example.com, and
		// logging in works with either form.
		r := signup("\uff45\uff56\uff45\uff20\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45\uff0e\uff43\uff4f\uff4d", "Eve \u5c71\u7530", "\u5c71\u7530 Co")
		expect(t, r, 201, "")
		if r.str("user", "email") != "eve@example.com" || r.str("user", "name") != "Eve \u5c71\u7530" {
			t.Fatalf("signup with a full-width address: %s", r.raw)
		}
		eve := account{id: r.str("user", "id"), email: "eve@example.com", token: r.str("token"), orgID: r.str("user", "organizationId")}
		expect(t, h.do("POST", "/api/auth/login", anon, map[string]any{"email": "eve@example.com", "password": password}), 200, "")
		expect(t, h.do("POST", "/api/auth/login", anon, map[string]any{"email": "\uff45\uff56\uff45@example.com", "password": password}), 200, "")
		expect(t, signup("EVE@example.com", "Eve", "Other Co"), 409, "Email already registered")

		// An internationalised address in one script is accepted as it is.
		r = signup("\u0438\u0432\u0430\u043d@\u043f\u0440\u0438\u043c\u0435\u0440.\u0440\u0444", "\u0418\u0432\u0430\u043d", "\u041f\u0440\u0438\u043c\u0435\u0440")
		expect(t, r, 201, "")
		if r.str("user", "email") != "\u0438\u0432\u0430\u043d@\u043f\u0440\u0438\u043c\u0435\u0440.\u0440\u0444" {
			t.Fatalf("signup with a Cyrillic address: %s", r.raw)
		}

		// The same rules on the other routes that take a name or an address.
		expect(t, h.do("PATCH", "/api/organization", bearer(eve.token), map[string]any{"name": "Eve Co\r\nX"}), 400, "Invalid organization name")
		expect(t, h.do("PATCH", "/api/organization", bearer(eve.token), map[string]any{"name": "\u202eoC evE"}), 400, "Invalid organization name")
		expect(t, h.do("POST", "/api/auth/api-keys", bearer(eve.token), map[string]any{"name": "CI \u202eyek"}), 400, "Invalid name")
		expect(t, h.do("POST", "/api/auth/api-keys", bearer(eve.token), map[string]any{"name": "CI\nkey"}), 400, "Invalid name")
		expect(t, h.do("POST", "/api/projects", bearer(eve.token), map[string]any{"name": "Web\r\nX"}), 400, "Validation error")
		expect(t, h.do("POST", "/api/projects", bearer(eve.token), map[string]any{"name": "\u202ebeW"}), 400, "Validation error")
		for _, email := range []string{"b\u200bob@example.com", "b\u043eb@example.com"} {
			expect(t, h.do("POST", "/api/invitations", bearer(eve.token), map[string]any{"email": email, "role": "viewer"}), 400, "Invalid email format")
		}
		r = h.do("POST", "/api/invitations", bearer(eve.token), map[string]any{"email": "\uff42\uff4f\uff42@example.com", "role": "viewer"})
		expect(t, r, 201, "")
		if r.str("invitation", "email") != "bob@example.com" {
			t.Fatalf("invitation to a full-width address: %s", r.raw)
		}
	})
}
