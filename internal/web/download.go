package web

import (
	"net/http"
	"os"
	"runtime"
)

// download serves the running verdict binary, so a CI job can fetch the CLI from the server it
// talks to (curl -fsSLo verdict $VERDICT_URL/downloads/verdict). It is the server's own build:
// X-Verdict-Platform says for which OS and architecture; it needs no session, as the code is
// no secret.
func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	if s.executable == "" {
		s.errorPage(w, r, http.StatusNotFound, "Page not found", "This server does not offer its binary for download.")
		return
	}
	f, err := os.Open(s.executable)
	if err != nil {
		s.log.Error("opening the binary for download", "err", err)
		s.errorPage(w, r, http.StatusNotFound, "Page not found", "This server does not offer its binary for download.")
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		s.log.Error("opening the binary for download", "err", err)
		s.errorPage(w, r, http.StatusNotFound, "Page not found", "This server does not offer its binary for download.")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", `attachment; filename="verdict"`)
	h.Set("X-Verdict-Platform", runtime.GOOS+"/"+runtime.GOARCH)
	h.Set("Cache-Control", "public, max-age=300")
	http.ServeContent(w, r, "verdict", fi.ModTime(), f)
}
