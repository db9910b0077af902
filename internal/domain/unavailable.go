package domain

import "errors"

// ErrUnavailable: a service Verdict depends on (the database, …) could not be reached or
// cannot serve now. The same call may pass later: the API answers 503 with Retry-After, and
// runners keep what they have until it is back.
var ErrUnavailable = errors.New("dependency unavailable")

// UnavailableError is ErrUnavailable naming the dependency ("database"), with the cause for
// the log.
type UnavailableError struct {
	Dependency string
	Err        error
}

// DependencyUnavailable wraps err, an error of dependency, as ErrUnavailable.
func DependencyUnavailable(dependency string, err error) error {
	return &UnavailableError{Dependency: dependency, Err: err}
}

func (e *UnavailableError) Error() string        { return e.Dependency + " unavailable: " + e.Err.Error() }
func (e *UnavailableError) Unwrap() error        { return e.Err }
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }
