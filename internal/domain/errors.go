package domain

import (
	"fmt"
	"net/http"
)

// Error is the one error type that crosses from services to HTTP. Status is the HTTP status,
// Code the stable `error` text ("Weak password"), Message the human text. Fields are extra
// members of the error body (attemptsRemaining, retryAfter, usage, valid).
type Error struct {
	Status  int
	Code    string
	Message string
	Fields  map[string]any
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// With returns a copy of e carrying one more body field.
func (e *Error) With(key string, value any) *Error {
	c := *e
	c.Fields = make(map[string]any, len(e.Fields)+1)
	for k, v := range e.Fields {
		c.Fields[k] = v
	}
	c.Fields[key] = value
	return &c
}

// NewError builds an Error; message defaults to the code.
func NewError(status int, code, message string) *Error {
	if message == "" {
		message = code
	}
	return &Error{Status: status, Code: code, Message: message}
}

func BadRequest(code, message string) *Error { return NewError(http.StatusBadRequest, code, message) }
func Unauthorized(code, message string) *Error {
	return NewError(http.StatusUnauthorized, code, message)
}
func Forbidden(code, message string) *Error { return NewError(http.StatusForbidden, code, message) }
func NotFound(code, message string) *Error  { return NewError(http.StatusNotFound, code, message) }
func Conflict(code, message string) *Error  { return NewError(http.StatusConflict, code, message) }
func TooMany(code, message string) *Error   { return NewError(http.StatusTooManyRequests, code, message) }
func Internal(code, message string) *Error {
	return NewError(http.StatusInternalServerError, code, message)
}
func Unavailable(code, message string) *Error {
	return NewError(http.StatusServiceUnavailable, code, message)
}
