package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"verdict/internal/domain"
	"verdict/internal/httpkind"
)

// maxBodyBytes caps every JSON request body: no route of the API takes more.
const maxBodyBytes = 1 << 20

// obj is a JSON object literal.
type obj = map[string]any

// jsonBuffers are reused response buffers; one past maxPooledBuffer is let go rather than kept.
var jsonBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledBuffer = 256 << 10

// writeJSON encodes v whole before writing, so the answer has a Content-Length (no chunking)
// and an encoding failure is a clean 500 rather than half a body. <, > and & are written as
// they are (see MarshalView).
func writeJSON(w http.ResponseWriter, status int, v any) {
	buf := jsonBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= maxPooledBuffer {
			jsonBuffers.Put(buf)
		}
	}()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		buf.Reset()
		buf.WriteString(`{"error":"Internal server error","message":"The answer could not be encoded","success":false}` + "\n")
		status = http.StatusInternalServerError
	}
	writeBody(w, status, buf.Bytes())
}

// MarshalView encodes a view for an answer or an event without escaping <, > and & (which
// json.Marshal writes as six-byte escapes, for JSON pasted into HTML): answers are
// application/json with nosniff and events text/event-stream, never read as HTML, and test
// results full of those characters would take six times their size.
func MarshalView(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// writeBody writes an encoded JSON answer.
func writeBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func ok(w http.ResponseWriter, v obj) {
	v["success"] = true
	writeJSON(w, http.StatusOK, v)
}

func created(w http.ResponseWriter, v obj) {
	v["success"] = true
	writeJSON(w, http.StatusCreated, v)
}

// writeDomainError writes the API's error body {success:false, error, message, ...fields}.
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
	writeJSON(w, statusOf(e), body)
}

// statusOf is the status that answers e: the one place the API turns an error's kind into an
// HTTP status (httpkind's table).
func statusOf(e *domain.Error) int { return httpkind.Status(e.Kind) }

// fail answers with err: a *domain.Error as it is, a dependency that is away (the database) as
// a 503 with Retry-After, anything else as a 500 carrying the operation's documented error
// text (code) while the cause goes only to the log.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error, code string) {
	var de *domain.Error
	if errors.As(err, &de) {
		writeDomainError(w, de)
		return
	}
	if de, away := s.outage.Refusal(err); away {
		writeDomainError(w, de)
		return
	}
	s.log.LogAttrs(r.Context(), slog.LevelError, "request failed", slog.String("op", code),
		slog.String("method", r.Method), slog.String("route", routeOf(r)), slog.String("request_id", w.Header().Get(requestIDHeader)), slog.String("err", err.Error()))
	writeDomainError(w, domain.Internal(code, "An internal error occurred; it has been logged"))
}

var errBodyTooLarge = domain.BadRequest("Request body too large", fmt.Sprintf("The request body must be at most %d bytes", maxBodyBytes))

// decode reads a JSON object body into v. Malformed JSON, a wrong type, a field v lacks (at
// any depth: a misspelt field would otherwise be dropped silently), trailing data or an
// oversize body is a 400 naming the problem. Maps in v take any key.
func decode(w http.ResponseWriter, r *http.Request, v any) *domain.Error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(strings.ToLower(ct), "application/json") {
		return domain.BadRequest("Invalid content type", "Send the body as application/json")
	}
	// What was read is kept for the walk below.
	var read bytes.Buffer
	dec := json.NewDecoder(io.TeeReader(http.MaxBytesReader(w, r.Body, maxBodyBytes), &read))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	key, unknown := unknownFieldKey(err)
	if err != nil && !unknown {
		return decodeError(err)
	}
	// The decoder matches names ignoring case ("IMAGE" fills image) and its error names only
	// the key; the walk matches names exactly, as documented, and names the field by its path.
	if path, found := firstUnknown(json.NewDecoder(bytes.NewReader(read.Bytes())), reflect.TypeOf(v), ""); found {
		return errUnknownField(path)
	}
	if unknown {
		return errUnknownField(key)
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

// unknownFieldPrefix starts the error of a decoder with DisallowUnknownFields for a key the
// target lacks; the key follows, quoted.
const unknownFieldPrefix = "json: unknown field "

func unknownFieldKey(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	quoted, ok := strings.CutPrefix(err.Error(), unknownFieldPrefix)
	if !ok {
		return "", false
	}
	key, uerr := strconv.Unquote(quoted)
	return key, uerr == nil
}

// errUnknownField is the 400 for a field the route does not take; path is as in
// "envVars[0].secret".
func errUnknownField(path string) *domain.Error {
	if len(path) > 200 {
		path = strings.ToValidUTF8(path[:200], "") + "…"
	}
	return domain.BadRequest("Invalid request", fmt.Sprintf("Unknown field %q", path))
}

// firstUnknown reads the next value of dec as t takes it and returns the path of its first
// member, in document order, that t does not have. The value was decoded once already, so it
// is well formed.
func firstUnknown(dec *json.Decoder, t reflect.Type, path string) (string, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	kind := t.Kind()
	if kind != reflect.Struct && kind != reflect.Map && kind != reflect.Slice && kind != reflect.Array {
		var skip json.RawMessage
		_ = dec.Decode(&skip)
		return "", false
	}
	tok, err := dec.Token()
	if err != nil {
		return "", false
	}
	open := json.Delim('{')
	if kind == reflect.Slice || kind == reflect.Array {
		open = '['
	}
	if tok != open {
		skipValue(dec, tok) // null, or a value of another type: no members of t
		return "", false
	}
	for i := 0; dec.More(); i++ {
		elem, at := t, fmt.Sprintf("%s[%d]", path, i)
		if open == '{' {
			k, err := dec.Token()
			key, _ := k.(string)
			if err != nil {
				return "", false
			}
			if at = key; path != "" {
				at = path + "." + key
			}
			if kind == reflect.Struct {
				ft, ok := jsonField(t, key)
				if !ok {
					return at, true
				}
				elem = ft
			}
		}
		if kind != reflect.Struct {
			elem = t.Elem()
		}
		if p, found := firstUnknown(dec, elem, at); found {
			return p, true
		}
	}
	_, _ = dec.Token() // the closing delimiter
	return "", false
}

// jsonField is the type of the field of struct t that the JSON key fills, matched exactly.
func jsonField(t reflect.Type, key string) (reflect.Type, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				if ft, ok := jsonField(et, key); ok {
					return ft, true
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		if name == key {
			return f.Type, true
		}
	}
	return nil, false
}

// skipValue reads the rest of a value whose first token was tok.
func skipValue(dec *json.Decoder, tok json.Token) {
	depth := 0
	if d, ok := tok.(json.Delim); ok && (d == '{' || d == '[') {
		depth = 1
	}
	for depth > 0 {
		t, err := dec.Token()
		if err != nil {
			return
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
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
