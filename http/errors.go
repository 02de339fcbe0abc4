package http

import (
	"context"
	"errors"
	"strconv"

	"github.com/valyala/fasthttp"

	"ticketd/event"
	"ticketd/ops"
)

// Error is an HTTP-side rejection: a status chosen by this package (401,
// 413, 422, 429, 503...) rather than mapped from an event.Code. Handlers may
// return one too, e.g. NewError(503, "...") when a dependency is down.
type Error struct {
	Status  int
	Message string
	Details []event.Detail
	// Reason, if set, is the stable identifier of the cause.
	Reason string
}

func (e *Error) Error() string { return e.Message }

// WithReason sets e's reason (a name from the event package's catalogue)
// and returns e.
func (e *Error) WithReason(reason string) *Error {
	e.Reason = reason
	return e
}

// NewError returns an error that answers status with msg and details in
// the one error envelope.
func NewError(status int, msg string, details ...event.Detail) *Error {
	return &Error{Status: status, Message: msg, Details: details}
}

// statusOfCode is THE one map from core codes to HTTP statuses.
func statusOfCode(c event.Code) int {
	switch c {
	case event.InvalidArgument:
		return 400
	case event.NotFound:
		return 404
	case event.AlreadyExists:
		return 409
	case event.FailedPrecondition:
		return 412
	case event.ResourceExhausted:
		return 429
	default:
		return 500
	}
}

// statusName is the envelope's error.status string for an HTTP status.
func statusName(status int) string {
	switch status {
	case 400, 413, 422:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 405:
		return "UNIMPLEMENTED"
	case 409:
		return "ALREADY_EXISTS"
	case 412:
		return "FAILED_PRECONDITION"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 502, 503:
		return "UNAVAILABLE"
	default:
		if status >= 400 && status < 500 {
			return "INVALID_ARGUMENT"
		}
		return "INTERNAL"
	}
}

// ErrorEnvelope is the wire form of every error response:
// {"error":{"code":400,"status":"INVALID_ARGUMENT","message":"...","details":[...]}}.
type ErrorEnvelope struct {
	Error ErrorObject `json:"error"`
}

// ErrorObject is the inside of ErrorEnvelope.
type ErrorObject struct {
	Code    int            `json:"code"`
	Status  string         `json:"status"`
	Message string         `json:"message"`
	Details []event.Detail `json:"details,omitempty"`
	Reason  string         `json:"reason"`
}

// errorResponse turns any handler error into a status and an envelope.
// internal reports whether err was unexpected (to be logged, never shown).
func errorResponse(err error) (status int, env ErrorEnvelope, internal bool) {
	// The direct types first: a sold-out answer (412) is the common error
	// of a flash sale, and errors.As walks by reflection.
	he, ee := errorTypes(err)
	var oe *ops.Error
	if he == nil && ee == nil {
		oe = opsError(err)
	}
	switch {
	case he != nil:
		status = he.Status
		env.Error = ErrorObject{Code: status, Status: statusName(status), Message: he.Message, Details: he.Details, Reason: he.Reason}
	case ee != nil:
		status = statusOfCode(ee.Code)
		if status == 500 {
			return 500, internalEnvelope(), true
		}
		env.Error = ErrorObject{Code: status, Status: statusName(status), Message: ee.Message, Details: ee.Details, Reason: ee.Reason}
	case oe != nil:
		// The application layer's one mapping of the shell's and the
		// payment provider's failures: its reason says the status.
		status = oe.Status()
		env.Error = ErrorObject{Code: status, Status: statusName(status), Message: oe.Message, Reason: oe.Reason}
	case errors.Is(err, context.DeadlineExceeded):
		status = 503
		env.Error = ErrorObject{Code: 503, Status: statusName(503), Message: "the service is busy, retry later", Reason: event.ReasonServiceBusy}
		internal = true
	case errors.Is(err, ops.ErrStorageFailed):
		// A handler that reads or writes the store itself (idempotency,
		// audit, outbox) meets the storage fault the actors turn into 503.
		he := errStorageUnavailable
		status = he.Status
		env.Error = ErrorObject{Code: status, Status: statusName(status), Message: he.Message, Reason: he.Reason}
	default:
		return 500, internalEnvelope(), true
	}
	if status < 400 || status > 599 {
		return 500, internalEnvelope(), true
	}
	if env.Error.Reason == "" {
		// Every answer names its cause; an error that names none gets
		// the generic reason of its status.
		env.Error.Reason = event.DefaultReason(status)
	}
	return status, env, internal || status >= 500
}

// opsError finds the *ops.Error in err's chain. Its own function: the
// target of errors.As escapes to the heap, and a sold-out refusal (an
// *event.Error) must not pay for it.
func opsError(err error) *ops.Error {
	var oe *ops.Error
	if errors.As(err, &oe) {
		return oe
	}
	return nil
}

// errorTypes finds the *Error or *event.Error in err's chain, an *Error
// first, as errors.As would; a direct one without errors.As, whose targets
// escape to the heap and whose walk uses reflection.
func errorTypes(err error) (*Error, *event.Error) {
	switch e := err.(type) {
	case *Error:
		return e, nil
	case *event.Error:
		if !wrapsHTTPError(e) {
			return nil, e
		}
	}
	var he *Error
	if errors.As(err, &he) {
		return he, nil
	}
	var ee *event.Error
	if errors.As(err, &ee) {
		return nil, ee
	}
	return nil, nil
}

// wrapsHTTPError reports whether an *event.Error has an *Error in its chain
// (it has no Unwrap today; this keeps errors.As's order if it gets one).
func wrapsHTTPError(e *event.Error) bool {
	var err error = e
	if _, ok := err.(interface{ Unwrap() error }); !ok {
		if _, ok := err.(interface{ Unwrap() []error }); !ok {
			return false
		}
	}
	var he *Error
	return errors.As(err, &he)
}

func internalEnvelope() ErrorEnvelope {
	return ErrorEnvelope{Error: ErrorObject{Code: 500, Status: "INTERNAL", Message: "internal error", Reason: event.ReasonInternal}}
}

// appendErrorJSON appends an envelope without reflection: the error paths
// (401, 429) are hot during a flash sale too.
func appendErrorJSON(b []byte, e ErrorObject) []byte {
	b = append(b, `{"error":{"code":`...)
	b = strconv.AppendInt(b, int64(e.Code), 10)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, e.Status)
	b = append(b, `,"message":`...)
	b = appendJSONString(b, e.Message)
	if len(e.Details) > 0 {
		b = append(b, `,"details":[`...)
		for i, d := range e.Details {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"field":`...)
			b = appendJSONString(b, d.Field)
			b = append(b, `,"reason":`...)
			b = appendJSONString(b, d.Reason)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if e.Reason != "" {
		b = append(b, `,"reason":`...)
		b = appendJSONString(b, e.Reason)
	}
	return append(b, "}}"...)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string literal, escaping what JSON
// requires and the HTML-sensitive characters, as encoding/json does.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// soldOutMessage is the message of the machine's sold-out refusal
// (event.Reasonf(FailedPrecondition, ReasonSoldOut, "sold out")).
const soldOutMessage = "sold out"

// soldOutBody is the envelope of the sold-out refusal, the common answer
// of a drop once its places are gone: rendered once, at start, by the
// general path (errorResponse, appendErrorJSON), so it is the same bytes.
var soldOutBody = func() []byte {
	_, env, _ := errorResponse(&event.Error{Code: event.FailedPrecondition, Reason: event.ReasonSoldOut, Message: soldOutMessage})
	return appendErrorJSON(nil, env.Error)
}()

// isSoldOut reports whether err is exactly the sold-out refusal whose
// envelope soldOutBody holds (an *event.Error has no Unwrap, so nothing
// else can be in its chain).
func isSoldOut(err error) bool {
	e, ok := err.(*event.Error)
	return ok && e.Code == event.FailedPrecondition && e.Reason == event.ReasonSoldOut &&
		e.Message == soldOutMessage && len(e.Details) == 0
}

// writeSoldOut writes the sold-out refusal's answer from soldOutBody.
func writeSoldOut(rc *fasthttp.RequestCtx) {
	rc.SetStatusCode(412)
	rc.SetContentType("application/json")
	b := rc.Response.SwapBody(nil)
	rc.Response.SwapBody(append(b[:0], soldOutBody...))
}

// cannedError is a whole HTTP/1.1 answer in the error envelope, for a
// connection refused before any request was read (conns.Config).
func cannedError(status int, msg string) []byte {
	_, env, _ := errorResponse(NewError(status, msg))
	body := appendErrorJSON(nil, env.Error)
	b := []byte("HTTP/1.1 " + strconv.Itoa(status) + " " + fasthttp.StatusMessage(status) + "\r\n" +
		"Content-Type: application/json\r\nConnection: close\r\nRetry-After: 1\r\n" +
		// No request was read, so none asked for a version: every answer
		// carries one all the same (decisions §4).
		"Service-Version: " + CurrentVersion + "\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n")
	return append(b, body...)
}
