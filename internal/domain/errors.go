package domain

import "strconv"

// Error is the one error type that crosses from services to the front doors. Kind says what
// went wrong, as a caller can act on it (each front door answers it with a status of its own
// choosing: internal/httpkind maps kinds to HTTP statuses for the API and the dashboard), Code
// is the stable `error` text ("Weak password"), Message the human text. Fields are extra
// members of the error body (attemptsRemaining, retryAfter, usage, valid).
type Error struct {
	Kind    Kind
	Code    string
	Message string
	Fields  map[string]any
}

// Kind is what kind of refusal or failure an Error is. The zero Kind is KindInternal.
type Kind uint8

const (
	// KindInternal: something went wrong that the caller cannot mend.
	KindInternal Kind = iota
	// KindInvalid: the request is malformed or breaks a rule (a field, a limit, a state the
	// caller can change).
	KindInvalid
	// KindUnauthorized: no credentials, or credentials that are not (or no longer) good.
	KindUnauthorized
	// KindForbidden: the caller is known but may not do this (a role, a plan, an origin).
	KindForbidden
	// KindNotFound: no such thing in the caller's organization (another organization's thing
	// is not found either).
	KindNotFound
	// KindConflict: the thing's state forbids this now (a run not finished, a name in use).
	KindConflict
	// KindRateLimited: too many requests; the retryAfter field says when to try again.
	KindRateLimited
	// KindUpstream: an outside service called on the caller's behalf (a tracker, the payment
	// or model provider, the Docker engine) failed or answered something unusable.
	KindUpstream
	// KindUpstreamTimeout: an outside service did not answer in time.
	KindUpstreamTimeout
	// KindUnavailable: a dependency Verdict needs is away (ErrUnavailable); the same call may
	// pass later.
	KindUnavailable
	// KindGone: the thing existed and was removed for good (a run's report files that
	// retention deleted); asking again will not bring it back.
	KindGone
	// KindTooLarge: the request's body is larger than the route takes (a webhook delivery).
	KindTooLarge
)

var kindNames = [...]string{KindInternal: "internal", KindInvalid: "invalid", KindUnauthorized: "unauthorized",
	KindForbidden: "forbidden", KindNotFound: "not found", KindConflict: "conflict", KindRateLimited: "rate limited",
	KindUpstream: "upstream", KindUpstreamTimeout: "upstream timeout", KindUnavailable: "unavailable", KindGone: "gone",
	KindTooLarge: "too large"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind " + strconv.Itoa(int(k))
}

func (e *Error) Error() string { return e.Kind.String() + ": " + e.Code + ": " + e.Message }

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

// NewError builds an Error of kind; message defaults to the code.
func NewError(kind Kind, code, message string) *Error {
	if message == "" {
		message = code
	}
	return &Error{Kind: kind, Code: code, Message: message}
}

func BadRequest(code, message string) *Error   { return NewError(KindInvalid, code, message) }
func Unauthorized(code, message string) *Error { return NewError(KindUnauthorized, code, message) }
func Forbidden(code, message string) *Error    { return NewError(KindForbidden, code, message) }
func NotFound(code, message string) *Error     { return NewError(KindNotFound, code, message) }
func Conflict(code, message string) *Error     { return NewError(KindConflict, code, message) }
func TooMany(code, message string) *Error      { return NewError(KindRateLimited, code, message) }
func Internal(code, message string) *Error     { return NewError(KindInternal, code, message) }
func Unavailable(code, message string) *Error  { return NewError(KindUnavailable, code, message) }
func Upstream(code, message string) *Error     { return NewError(KindUpstream, code, message) }
func Gone(code, message string) *Error         { return NewError(KindGone, code, message) }

// TooLarge refuses a body past the route's bound.
func TooLarge(code, message string) *Error { return NewError(KindTooLarge, code, message) }
func UpstreamTimeout(code, message string) *Error {
	return NewError(KindUpstreamTimeout, code, message)
}
