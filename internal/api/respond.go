package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"verdict/internal/domain"
)

// maxBodyBytes caps every JSON request body: no route of the API takes more.
const maxBodyBytes = 1 << 20

// obj is a JSON object literal.
type obj = map[string]any

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func ok(w http.ResponseWriter, v obj) {
	v["success"] = true
	writeJSON(w, http.StatusOK, v)
}

func created(w http.ResponseWriter, v obj) {
	v["success"] = true
	writeJSON(w, http.StatusCreated, v)
}

// writeDomainError writes the SPEC's error body {success:false, error, message, ...fields}.
func writeDomainError(w http.ResponseWriter, e *domain.Error) {
	body := make(obj, len(e.Fields)+3)
	for k, v := range e.Fields {
		body[k] = v
	}
	if secs, ok := e.Fields["retryAfter"].(int); ok {
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
	body["success"] = false
	body["error"] = e.Code
	body["message"] = e.Message
	writeJSON(w, e.Status, body)
}

// fail answers with err: a *domain.Error as it is, anything else as a 500 carrying the
// operation's SPEC text (code) while the cause goes only to the log.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error, code string) {
	var de *domain.Error
	if errors.As(err, &de) {
		writeDomainError(w, de)
		return
	}
	s.log.LogAttrs(r.Context(), slog.LevelError, "request failed", slog.String("op", code),
		slog.String("method", r.Method), slog.String("path", loggedPath(r.URL.Path)), slog.String("err", err.Error()))
	writeDomainError(w, domain.Internal(code, "An internal error occurred; it has been logged"))
}

var errBodyTooLarge = domain.BadRequest("Request body too large", fmt.Sprintf("The request body must be at most %d bytes", maxBodyBytes))

// decode reads a JSON object body into v. Malformed JSON, a wrong type, trailing data or an
// oversize body is a 400 naming the problem; unknown fields are ignored.
func decode(w http.ResponseWriter, r *http.Request, v any) *domain.Error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(strings.ToLower(ct), "application/json") {
		return domain.BadRequest("Invalid content type", "Send the body as application/json")
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return domain.BadRequest("Invalid JSON", "The body must hold exactly one JSON object")
	}
	return nil
}

func decodeError(err error) *domain.Error {
	var (
		maxErr  *http.MaxBytesError
		typeErr *json.UnmarshalTypeError
		synErr  *json.SyntaxError
	)
	switch {
	case errors.As(err, &maxErr):
		return errBodyTooLarge
	case errors.Is(err, io.EOF):
		return domain.BadRequest("Invalid JSON", "The request body is empty; send a JSON object")
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return domain.BadRequest("Invalid JSON", "The body must be a JSON object")
		}
		return domain.BadRequest("Validation error", fmt.Sprintf("Field %q must be of type %s", typeErr.Field, jsonType(typeErr.Type.Kind().String())))
	case errors.As(err, &synErr), errors.Is(err, io.ErrUnexpectedEOF):
		return domain.BadRequest("Invalid JSON", "The request body is not valid JSON")
	default:
		var de *domain.Error
		if errors.As(err, &de) {
			return de
		}
		return domain.BadRequest("Invalid JSON", "The request body could not be read")
	}
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "map", "struct":
		return "object"
	case "slice", "array":
		return "array"
	case "ptr":
		return "the documented type"
	default:
		return "number"
	}
}
