package ops_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/ask"
	"ticketd/event"
	"ticketd/ops"
	"ticketd/payments"
	"ticketd/persistence"
)

// TestMapErr is the one mapping of the shell's and the hosted provider's
// failures, as the API and the hosted pages answered them before the
// layer (http/api's shellErr and providerError): the console, which asked
// the actors itself, got the raw errors and rendered every one of them as
// its 503 page, which it still does for an *ops.Error.
func TestMapErr(t *testing.T) {
	refused := errors.New("stripe: payment provider refused the request: no such currency")
	for _, tc := range []struct {
		name    string
		err     error
		reason  string
		status  int
		msg     string
		unknown bool // the write may still commit
	}{
		{"busy", fmt.Errorf("ask evt_1: %w", ask.ErrBusy), event.ReasonEventBusy, 503, "the event is busy; retry shortly", false},
		{"unavailable", fmt.Errorf("%w: no answer in 5s", ask.ErrUnavailable), event.ReasonUnavailable, 503, "temporarily unavailable; retry", true},
		{"storage", fmt.Errorf("%w: commit: %w", ask.ErrUnavailable, persistence.ErrFailed), event.ReasonStorageUnavailable, 503,
			"storage unavailable: writes cannot be made durable; the service restarts to recover, retry shortly", true},
		{"provider down", &payments.PageError{Retryable: true, Err: fmt.Errorf("%w: timeout", payments.ErrUnavailable)}, event.ReasonPaymentProviderDown, 503,
			"the payment provider could not be reached; nothing was changed: retry the same request", false},
		{"provider refused", &payments.PageError{Err: refused}, event.ReasonPaymentProviderRefused, 502,
			"the payment provider refused the payment page: " + refused.Error(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ops.MapErr(tc.err)
			var oe *ops.Error
			require.ErrorAs(t, err, &oe)
			assert.Equal(t, tc.reason, oe.Reason)
			assert.Equal(t, tc.status, oe.Status())
			assert.Equal(t, tc.msg, oe.Error())
			assert.ErrorIs(t, err, tc.err, "the cause stays in the chain")
			assert.Equal(t, tc.unknown, ops.OutcomeUnknown(err))
			assert.True(t, ops.IsShellFailure(err))
			assert.Same(t, oe, ops.MapErr(err), "mapping twice changes nothing")
		})
	}
	biz := &event.Error{Code: event.FailedPrecondition, Reason: event.ReasonSoldOut, Message: "sold out"}
	assert.Same(t, biz, ops.MapErr(biz), "a business refusal passes unchanged")
	assert.NoError(t, ops.MapErr(nil))
	other := errors.New("directory: not found")
	assert.Equal(t, other, ops.MapErr(other))
	assert.False(t, ops.IsShellFailure(other))
}
