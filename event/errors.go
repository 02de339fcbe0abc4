package event

import "fmt"

// Code classifies a business rejection. The HTTP layer owns the one map
// from Code to HTTP status and error.status string.
type Code int

const (
	// InvalidArgument: malformed or semantically invalid input (400).
	InvalidArgument Code = iota + 1
	// NotFound: no such record in this event, or not visible (404).
	NotFound
	// AlreadyExists: a unique value is taken, e.g. a custom code (409).
	AlreadyExists
	// FailedPrecondition: the state forbids it: sold out, not pending,
	// not confirmed, currency locked, agenda reset unconfirmed (412).
	FailedPrecondition
	// ResourceExhausted: a per-client limit is reached, e.g. the open
	// orders of one address (429).
	ResourceExhausted
)

// Detail names one offending field of a request, with a JSON-path-like
// field name such as "items[0].quantity".
type Detail struct {
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

// Error is a business rejection: a value, not a panic. Broken invariants
// panic; bad input never does.
type Error struct {
	Code    Code
	Message string
	Details []Detail
	// Reason is the stable UPPER_SNAKE_CASE identifier of the cause, the
	// envelope's error.reason; empty means the HTTP layer's default for
	// Code.
	Reason string
}

func (e *Error) Error() string { return e.Message }

// Errorf returns an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Reasonf returns an *Error with a stable reason and a formatted message.
func Reasonf(code Code, reason, format string, args ...any) *Error {
	return &Error{Code: code, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// FieldError returns an InvalidArgument *Error naming one field.
func FieldError(field, reason string) *Error {
	return &Error{Code: InvalidArgument, Message: field + ": " + reason, Details: []Detail{{Field: field, Reason: reason}}}
}
