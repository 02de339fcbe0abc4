package event

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stripeConfirmed runs a script prefix that leaves ord_1 awaiting payment
// on a hosted provider's page cs_A (100 USD, one place of capacity 1).
func stripeConfirmed(t *testing.T) *scriptRunner {
	t.Helper()
	r := onePlaceOrdered(t, 100)
	// Prepare keeps the hold's new end and the instant it was asked at.
	require.Contains(t, r.exec(ConfirmOrder{Ref: "ord_1", Storefront: true, Prepare: true}), "order.confirm_prepared")
	res, changes, err := r.m.Decide(r.now, ConfirmOrder{Ref: "ord_1", Storefront: true, Prepare: true})
	require.NoError(t, err)
	require.Empty(t, changes, "a second prepare answers the kept one")
	prep := res.(Order)
	assert.Equal(t, OrderStatusOpen, prep.Status)
	require.NotNil(t, prep.HoldExpiresAt)
	assert.True(t, prep.PreparedAt.Equal(r.now))

	until := r.now.Add(35 * time.Minute)
	out := r.exec(ConfirmOrder{Ref: "ord_1", Storefront: true, Provider: &ProviderCheckout{
		Provider: "stripe", Ref: "cs_A", URL: "https://checkout.stripe.com/c/pay/cs_A", HoldUntil: until}})
	require.Contains(t, out, "order.awaiting_payment")
	o := r.m.State().Orders["ord_1"]
	require.Equal(t, "cs_A", o.ProviderRef)
	require.True(t, o.HoldUntil.Equal(until), "the hold ends when the page expires")
	v := r.m.orderView(o)
	require.Equal(t, "https://checkout.stripe.com/c/pay/cs_A", *v.PaymentURL)
	return r
}

func settleRef(ref string, amount Money, delivery string) SettlePayment {
	return SettlePayment{OrderRef: "ord_1", ProviderRef: ref, Amount: amount, Currency: "usd", DeliveryID: delivery, Outcome: "succeeded"}
}

// TestProviderSecondChargeIsRefunded: a success of another page of an
// order already paid is refunded in full, once, and never counts against
// the console's refunds; the same page again is a repeat.
func TestProviderSecondChargeIsRefunded(t *testing.T) {
	r := stripeConfirmed(t)
	require.Contains(t, r.exec(settleRef("cs_A", 10000, "evt_1")), "order.paid")
	assert.Empty(t, r.changesOf(settleRef("cs_A", 10000, "evt_2")), "the same payment again is a repeat")

	out := r.exec(settleRef("cs_B", 10000, "evt_3"))
	require.Contains(t, out, "refund.requested")
	o := r.m.State().Orders["ord_1"]
	require.Len(t, o.Refunds, 1)
	assert.Equal(t, "cs_B", o.Refunds[0].ProviderRef)
	assert.Equal(t, Money(10000), o.Refunds[0].Amount)
	assert.False(t, o.Refunds[0].Full, "the order keeps its place")
	assert.Equal(t, OrderStatusPaid, o.Status)
	assert.Empty(t, r.changesOf(settleRef("cs_B", 10000, "evt_4")), "a second delivery of the second charge")

	// A mismatched second charge is refunded too: as much as it took.
	require.Contains(t, r.exec(settleRef("cs_C", 123, "evt_5")), "refund.requested")

	// The console may still refund the whole order.
	left, err := r.m.refundable(r.now, r.m.State().Orders["ord_1"], true)
	require.NoError(t, err)
	assert.Equal(t, Money(10000), left)

	// The refund target survives a snapshot.
	b, err := MarshalState(r.m.State())
	require.NoError(t, err)
	st, err := UnmarshalState(b)
	require.NoError(t, err)
	o2 := st.Orders["ord_1"]
	assert.Equal(t, "cs_A", o2.ProviderRef)
	assert.Equal(t, "cs_B", o2.Refunds[0].ProviderRef)
	assert.Equal(t, "cs_C", o2.Refunds[1].ProviderRef)

	// And a replay of the log.
	m := NewMachine("evt_1", testConfig(), newSeqIDs(7))
	for _, b := range r.log {
		ch, err := UnmarshalChange(b)
		require.NoError(t, err)
		m.Apply(ch)
	}
	o3 := m.State().Orders["ord_1"]
	assert.Equal(t, o.ProviderURL, o3.ProviderURL)
	assert.Equal(t, "cs_A", o3.ProviderRef)
	assert.Equal(t, "cs_B", o3.Refunds[0].ProviderRef)
}

// TestProviderPrepareIsKept: the first prepare of a confirm keeps its
// instant and hold end; a retry minutes later (the provider was down),
// after a snapshot or a replay of the log answers the same ones, so the
// shell sends the provider the same parameters; Renew prepares anew.
func TestProviderPrepareIsKept(t *testing.T) {
	r := onePlaceOrdered(t, 100)
	first := r.now
	prepare := ConfirmOrder{Ref: "ord_1", Storefront: true, Prepare: true}
	out := r.exec(prepare)
	require.Contains(t, out, "change order.confirm_prepared")
	require.NotContains(t, out, "\nfeed", "nothing the API shows changed")
	updated := r.m.State().Orders["ord_1"].UpdatedAt

	r.now = first.Add(4*time.Minute + 59*time.Second)
	res, changes, err := r.m.Decide(r.now, prepare)
	require.NoError(t, err)
	require.Empty(t, changes)
	v := res.(Order)
	assert.True(t, v.PreparedAt.Equal(first), "the first try's instant, not now")
	assert.True(t, v.HoldExpiresAt.Time.Equal(first.Add(testConfig().OrderHold)), "the first try's hold end")
	assert.Equal(t, updated, r.m.State().Orders["ord_1"].UpdatedAt)
	require.Contains(t, r.replayCheck(), "replay ok")

	// Across a restart: the snapshot keeps it.
	b, err := MarshalState(r.m.State())
	require.NoError(t, err)
	st, err := UnmarshalState(b)
	require.NoError(t, err)
	assert.True(t, st.Orders["ord_1"].PreparedAt.Equal(first))
	assert.True(t, st.Orders["ord_1"].PreparedHold.Equal(first.Add(testConfig().OrderHold)))

	// Renew prepares anew, at now.
	renew := prepare
	renew.Renew = true
	res, changes, err = r.m.Decide(r.now, renew)
	require.NoError(t, err)
	require.Len(t, changes, 1)
	assert.True(t, res.(Order).PreparedAt.Equal(r.now))
	r.m.Apply(changes[0])

	// The confirm itself still records the page.
	require.Contains(t, r.exec(ConfirmOrder{Ref: "ord_1", Storefront: true, Provider: &ProviderCheckout{
		Provider: "stripe", Ref: "cs_A", URL: "https://checkout.stripe.com/c/pay/cs_A", HoldUntil: r.now.Add(35 * time.Minute)}}),
		"order.awaiting_payment")
}

// TestProviderPrepareOfAFreeOrderChangesNothing: Prepare never fulfils.
func TestProviderPrepareOfAFreeOrderChangesNothing(t *testing.T) {
	r := onePlaceOrdered(t, 0)
	res, changes, err := r.m.Decide(r.now, ConfirmOrder{Ref: "ord_1", Storefront: true, Prepare: true})
	require.NoError(t, err)
	assert.Empty(t, changes)
	assert.Equal(t, OrderStatusOpen, res.(Order).Status)
}

// TestProviderPageClosedOnRelease: cancelling an order, or its hold
// lapsing, while its page is open owes the page's closing.
func TestProviderPageClosedOnRelease(t *testing.T) {
	r := stripeConfirmed(t)
	_, changes, err := r.m.Decide(r.now, CancelOrder{Ref: "ord_1"})
	require.NoError(t, err)
	var effs []Effect
	for _, ch := range changes {
		effs = AppendEffects(effs, ch)
	}
	require.Contains(t, effs, Effect{Kind: EffectCheckoutClose, ID: "ord_1", Ref: "cs_A", At: r.now})

	r = stripeConfirmed(t)
	_, changes, err = r.m.Decide(r.now.Add(36*time.Minute), Expire{Now: r.now.Add(36 * time.Minute)})
	require.NoError(t, err)
	effs = nil
	for _, ch := range changes {
		effs = AppendEffects(effs, ch)
	}
	require.Len(t, effs, 1)
	assert.Equal(t, EffectCheckoutClose, effs[0].Kind)

	// The page paid after all, late: the order is fulfilled (its place is
	// free) and paid with that page.
	for _, ch := range changes {
		r.m.Apply(ch)
	}
	r.now = r.now.Add(40 * time.Minute)
	require.Contains(t, r.exec(settleRef("cs_A", 10000, "evt_9")), "order.paid")
}

// TestProviderPageMustOutliveNow: a page that expired already is refused.
func TestProviderPageMustOutliveNow(t *testing.T) {
	r := onePlaceOrdered(t, 100)
	out := r.exec(ConfirmOrder{Ref: "ord_1", Storefront: true, Provider: &ProviderCheckout{
		Provider: "stripe", Ref: "cs_A", URL: "https://x", HoldUntil: r.now}})
	assert.Contains(t, out, "error")
	assert.Equal(t, OrderStatusOpen, r.m.State().Orders["ord_1"].Status)
}

func (r *scriptRunner) changesOf(c Command) []Change {
	r.t.Helper()
	_, changes, err := r.m.Decide(r.now, c)
	require.NoError(r.t, err)
	return changes
}
