package tracker

import (
	"errors"
	"fmt"
	"strings"
)

// Errors of a tracker call, used as the Kind of an [*Error]: test them with errors.Is.
var (
	ErrKeyRefused  = errors.New("the tracker refused the API key")
	ErrUpstream    = errors.New("the tracker answered with an error")
	ErrTimeout     = errors.New("the tracker did not answer in time")
	ErrUnreachable = errors.New("the tracker could not be reached")
	ErrMalformed   = errors.New("the tracker's answer could not be read")
	// ErrSettingsRefused: the key is good, but the settings name what the tracker does not
	// have (a Jira project or issue type); Message says which.
	ErrSettingsRefused = errors.New("the tracker refused the settings")
)

// Error is every error of a tracker call.
type Error struct {
	Tracker    string // "Linear", "Monday.com", "Jira"
	Op         string // the operation: a GraphQL operation's name, or a REST call ("POST /issue")
	Kind       error  // one of the Err values, or the caller's context error when it gave up
	StatusCode int    // the HTTP status, when the tracker answered
	// Message is the tracker's own explanation (its errors' messages, or the HTTP status
	// text), or what was wrong with its answer: one line, at most 300 bytes, never the key.
	Message string
	Code    string // the tracker's error code, when it gave one
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Tracker + " " + e.Op + ": " + e.Kind.Error())
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.StatusCode)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Kind }

// Malformed is the error of an answer that parsed but lacks what the operation needs (an
// issue without a link, say).
func Malformed(tracker, op, detail string) *Error {
	return &Error{Tracker: tracker, Op: op, Kind: ErrMalformed, Message: detail}
}
