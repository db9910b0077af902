package web

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strings"

	"verdict/internal/domain"
)

// Flash messages: the outcome of an action, shown once by the page it redirects to.

// flash is the outcome of an action, shown once on the page the action redirects to. It travels
// in a short-lived cookie rather than the URL, so a link cannot make a page say anything.
type flash struct {
	Error bool
	Text  string
}

const flashCookie = "verdict_flash"

func (s *Server) setFlash(w http.ResponseWriter, f flash) {
	kind := "ok"
	if f.Error {
		kind = "error"
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: base64.RawURLEncoding.EncodeToString([]byte(kind + ":" + f.Text)),
		Path: "/", MaxAge: 60, HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode})
}

// takeFlash reads the flash cookie of r, if any, and clears it.
func takeFlash(w http.ResponseWriter, r *http.Request, secure bool) *flash {
	c, err := r.Cookie(flashCookie)
	if err != nil {
		return nil
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: secure,
		SameSite: http.SameSiteLaxMode})
	raw, err := base64.RawURLEncoding.DecodeString(c.Value)
	kind, text, ok := strings.Cut(string(raw), ":")
	if err != nil || !ok || text == "" {
		return nil
	}
	return &flash{Error: kind == "error", Text: strings.ToValidUTF8(text, "\uFFFD")}
}

// done redirects to path after an action, with its outcome.
func (s *Server) done(w http.ResponseWriter, r *http.Request, path, text string) {
	s.setFlash(w, flash{Text: text})
	redirect(w, r, path)
}

// refused explains a service's refusal of an action: a 403 or 404 (a viewer's forged form, a
// run of another organization) is an error page with that status; any other refusal (a
// validation error, a run already finished) goes back to path with the service's words.
func (s *Server) refused(w http.ResponseWriter, r *http.Request, path string, err error) {
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind == domain.KindForbidden || de.Kind == domain.KindNotFound {
		s.fail(w, r, err)
		return
	}
	s.setFlash(w, flash{Error: true, Text: de.Code + ": " + de.Message})
	redirect(w, r, path)
}
