package http

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ticketd/ask"
	"ticketd/event"
	"ticketd/ops"
	"ticketd/payments"
	"ticketd/persistence"
)

func TestErrorMap(t *testing.T) {
	for _, c := range []struct {
		err    error
		status int
		name   string
	}{
		{event.Errorf(event.InvalidArgument, "x"), 400, "INVALID_ARGUMENT"},
		{event.Errorf(event.NotFound, "x"), 404, "NOT_FOUND"},
		{event.Errorf(event.AlreadyExists, "x"), 409, "ALREADY_EXISTS"},
		{event.Errorf(event.FailedPrecondition, "x"), 412, "FAILED_PRECONDITION"},
		{fmt.Errorf("wrapped: %w", event.Errorf(event.NotFound, "x")), 404, "NOT_FOUND"},
		{event.Errorf(event.Code(99), "x"), 500, "INTERNAL"},
		{NewError(401, "x"), 401, "UNAUTHENTICATED"},
		{NewError(413, "x"), 413, "INVALID_ARGUMENT"},
		{NewError(422, "x"), 422, "INVALID_ARGUMENT"},
		{NewError(429, "x"), 429, "RESOURCE_EXHAUSTED"},
		{NewError(503, "x"), 503, "UNAVAILABLE"},
		{NewError(405, "x"), 405, "UNIMPLEMENTED"},
		{context.DeadlineExceeded, 503, "UNAVAILABLE"},
		{errors.New("boom"), 500, "INTERNAL"},
	} {
		status, env, _ := errorResponse(c.err)
		require.Equal(t, c.status, status, c.err.Error())
		require.Equal(t, c.status, env.Error.Code)
		require.Equal(t, c.name, env.Error.Status)
	}
	_, env, internal := errorResponse(errors.New("secret path /etc/x"))
	require.True(t, internal)
	require.Equal(t, "internal error", env.Error.Message)
}

func TestAppendErrorJSONEscapes(t *testing.T) {
	b := appendErrorJSON(nil, ErrorObject{Code: 400, Status: "INVALID_ARGUMENT", Message: "a\"b\\c\n<d>\x01",
		Details: []event.Detail{{Field: "x\"", Reason: "é"}}})
	require.JSONEq(t, `{"error":{"code":400,"status":"INVALID_ARGUMENT","message":"a\"b\\c\n<d>\u0001",
		"details":[{"field":"x\"","reason":"é"}]}}`, string(b))
}

func TestUnroutedEnvelopes(t *testing.T) {
	h := newHarness(t, nil)
	r := h.do("GET", "/v1/no/such/path", skLive, "")
	require.Equal(t, 404, r.status)
	require.Equal(t, "NOT_FOUND", r.envelope(t).Status)
	require.Equal(t, "nosniff", r.header.Get("X-Content-Type-Options"))
	require.NotEmpty(t, r.header.Get("Request-Id"))

	r = h.do("GET", "/v1/events/", skLive, "")
	require.Equal(t, 404, r.status, "no trailing-slash redirect")

	r = h.do("DELETE", "/v1/events", skLive, "")
	require.Equal(t, 405, r.status)
	require.Equal(t, "UNIMPLEMENTED", r.envelope(t).Status)
	require.Contains(t, r.header.Get("Allow"), "GET")
	require.Equal(t, CurrentVersion, r.header.Get("service-version"))
}

func TestBodyLimits(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxBodyBytes = 4096 })
	big := `{"email":"a@b.co","name":"` + strings.Repeat("x", 5000) + `"}`
	r := h.do("POST", "/v1/events/evt_1/orders", skLive, big)
	require.Equal(t, 413, r.status)
	e := r.envelope(t)
	require.Equal(t, "INVALID_ARGUMENT", e.Status)
	require.Equal(t, CurrentVersion, r.header.Get("service-version"))

	r = h.do("POST", "/v1/events/evt_1/orders", skLive, `{"email":"x","items":[{"quantity":"1"}],"bogus":true}`)
	require.Equal(t, 400, r.status)
	e = r.envelope(t)
	require.Equal(t, []event.Detail{
		{Field: "bogus", Reason: "unknown field"},
		{Field: "email", Reason: "must be an email address"},
		{Field: "items[0].itemId", Reason: "is required"},
		{Field: "items[0].itemType", Reason: "is required"},
		{Field: "items[0].quantity", Reason: "must be an integer"},
	}, e.Details)

	// A route without a body takes nothing, {} or whitespace, and nothing else.
	require.Equal(t, 200, h.do("POST", "/v1/events/evt_1/archive", skLive, "").status)
	require.Equal(t, 200, h.do("POST", "/v1/events/evt_1/archive", skLive, " {} ").status)
	r = h.do("POST", "/v1/events/evt_1/archive", skLive, `{"force":true}`)
	require.Equal(t, 400, r.status)
	require.Equal(t, "force", r.envelope(t).Details[0].Field)

	r = h.do("PUT", "/v1/bundles/bdl_1/items", skLive, `[{"itemType":"addon","itemId":"a","quantity":1},{"itemType":"addon","itemId":"b","quantity":1}]`)
	require.Equal(t, 200, r.status)
	require.Equal(t, 2, r.result(t).Items)
}

// TestBodyTooLargeIsReadable checks that a client still writing a refused
// body gets the 413 instead of a connection reset.
func TestBodyTooLargeIsReadable(t *testing.T) {
	h := newHarness(t, nil)
	for _, n := range []int{1<<20 + 1, 3 << 20} {
		for range 3 {
			r := h.do("POST", "/v1/events/evt_1/orders", skLive, `{"name":"`+strings.Repeat("x", n)+`"}`)
			require.Equal(t, 413, r.status)
			require.Equal(t, "INVALID_ARGUMENT", r.envelope(t).Status)
		}
	}
	body := `{"email":"a@b.co","items":[{"itemType":"addon","itemId":"a","quantity":1}],"name":"x","responses":{"pad":"` +
		strings.Repeat("x", 1<<20-200) + `"}}`
	require.Less(t, len(body), 1<<20)
	r := h.do("POST", "/v1/events/evt_1/orders", skLive, body)
	require.Equal(t, 201, r.status, "just under the bound is fine")
}

// TestLayerErrorsAnswerAsBefore: the application layer's mapped failures
// (ops.MapErr) answer the envelopes the API answered when it mapped them
// itself (a *Error 503 or 502 with the same message and reason).
func TestLayerErrorsAnswerAsBefore(t *testing.T) {
	for _, c := range []struct {
		err  error
		want *Error
	}{
		{ask.ErrBusy, NewError(503, "the event is busy; retry shortly").WithReason(event.ReasonEventBusy)},
		{ask.ErrUnavailable, NewError(503, "temporarily unavailable; retry")},
		{fmt.Errorf("%w: %w", ask.ErrUnavailable, persistence.ErrFailed), errStorageUnavailable},
		{&payments.PageError{Retryable: true, Err: payments.ErrUnavailable},
			NewError(503, "the payment provider could not be reached; nothing was changed: retry the same request").WithReason(event.ReasonPaymentProviderDown)},
		{&payments.PageError{Err: errors.New("bad currency")},
			NewError(502, "the payment provider refused the payment page: bad currency").WithReason(event.ReasonPaymentProviderRefused)},
	} {
		status, env, internal := errorResponse(ops.MapErr(c.err))
		wantStatus, wantEnv, wantInternal := errorResponse(c.want)
		require.Equal(t, wantStatus, status, c.err.Error())
		require.Equal(t, wantEnv, env, c.err.Error())
		require.Equal(t, wantInternal, internal)
	}
}
