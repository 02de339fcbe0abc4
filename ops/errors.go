package ops

import (
	"errors"

	"ticketd/ask"
	"ticketd/event"
	"ticketd/payments"
	"ticketd/persistence"
)

// The shell's sentinels, for front doors that must tell them apart
// (errors.Is works on a mapped *Error too: it wraps its cause).
var (
	// ErrBusy: the event's queue is full; nothing was asked.
	ErrBusy = ask.ErrBusy
	// ErrUnavailable: the shell did not answer; a write may still commit.
	ErrUnavailable = ask.ErrUnavailable
)

// Error is a request the layer could not carry out for a cause outside
// the request: the shell did not answer, the store cannot make writes
// durable, or the hosted payment provider failed. Reason names the cause
// in the event package's catalogue (event.Reasons), which also gives its
// HTTP status; Message says it to the caller.
type Error struct {
	Reason  string
	Message string
	Err     error // the cause
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Err }

// Messages of the shell's failures, as every door has answered them.
const (
	msgBusy        = "the event is busy; retry shortly"
	msgUnavailable = "temporarily unavailable; retry"
	msgStorage     = "storage unavailable: writes cannot be made durable; the service restarts to recover, retry shortly"
	msgPageDown    = "the payment provider could not be reached; nothing was changed: retry the same request"
	msgPageRefused = "the payment provider refused the payment page: "
)

// MapErr is THE mapping of the shell's and the hosted provider's failures
// to an *Error; business errors (*event.Error, the directory's refusals)
// and errors mapped already pass unchanged.
func MapErr(err error) error {
	switch err.(type) {
	case nil, *event.Error, *Error:
		// The common cases first: a sold-out answer is the usual error of
		// a flash sale, and the errors.Is walks below are for failures.
		return err
	}
	var pe *payments.PageError
	switch {
	case errors.Is(err, ask.ErrBusy):
		return &Error{Reason: event.ReasonEventBusy, Message: msgBusy, Err: err}
	case errors.Is(err, ask.ErrUnavailable):
		if errors.Is(err, persistence.ErrFailed) {
			return &Error{Reason: event.ReasonStorageUnavailable, Message: msgStorage, Err: err}
		}
		return &Error{Reason: event.ReasonUnavailable, Message: msgUnavailable, Err: err}
	case errors.As(err, &pe):
		if pe.Retryable {
			return &Error{Reason: event.ReasonPaymentProviderDown, Message: msgPageDown, Err: err}
		}
		return &Error{Reason: event.ReasonPaymentProviderRefused, Message: msgPageRefused + pe.Err.Error(), Err: err}
	}
	return err
}

// IsShellFailure reports whether err is one the layer mapped (an *Error).
func IsShellFailure(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// OutcomeUnknown reports whether a write that failed with err may still
// commit: the shell did not answer in time (not a busy event nor a
// provider down, which refused the request before anything was asked).
func OutcomeUnknown(err error) bool { return errors.Is(err, ask.ErrUnavailable) }

// reasonStatus is the HTTP status the event package's catalogue gives
// each reason (built once; read-only).
var reasonStatus = func() map[string]int {
	m := map[string]int{}
	for _, r := range event.Reasons() {
		m[r.Name] = r.Status
	}
	return m
}()

// Status is the HTTP status of e's reason in the catalogue (503 for a
// reason it does not list: the shell could not answer).
func (e *Error) Status() int {
	if s, ok := reasonStatus[e.Reason]; ok {
		return s
	}
	return 503
}

// ErrStorageFailed is the store's fault: writes cannot be made durable
// (a door that reads or writes the store's records itself meets it).
var ErrStorageFailed = persistence.ErrFailed
