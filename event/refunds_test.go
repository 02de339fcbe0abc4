package event

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// onePlaceOrdered runs the script prefix of the payment tests: a
// published event with one open type of one place at price (USD), and
// ord_1 placed for it by a@x.io.
func onePlaceOrdered(t *testing.T, price int) *scriptRunner {
	t.Helper()
	r := newScriptRunner(t)
	for _, l := range []string{
		`CreateEvent {"name":"Conf","timezone":"UTC","startsAt":"2026-09-01T09:00:00Z"}`,
		fmt.Sprintf(`CreateTicketType {"name":"GA","capacity":1,"priceAmount":%d}`, price),
		`UpdateTicketType ID=tt_1 {"status":"open"}`,
		`UpdateEvent {"status":"published"}`,
		`PlaceOrder {"email":"a@x.io","items":[{"itemType":"registration_type","itemId":"tt_1","quantity":1}]}`,
	} {
		require.NotContains(t, r.run(l), "error", l)
	}
	return r
}

// paidOrder runs a script prefix that leaves ord_1 paid (100 USD, one
// place of capacity 1) and returns the runner.
func paidOrder(t *testing.T) *scriptRunner {
	t.Helper()
	r := onePlaceOrdered(t, 100)
	require.NotContains(t, r.run(`ConfirmOrder Ref=ord_1 Storefront=true`), "error")
	o := r.m.State().Orders["ord_1"]
	out := r.exec(SettlePayment{PaymentID: o.PaymentID, Amount: o.Total, Currency: "USD", DeliveryID: "d1", Outcome: "succeeded"})
	require.Contains(t, out, "order.paid")
	return r
}

// TestPendingRefundSurvivesRestart: a refund requested before a crash
// (logged, the provider's answer lost) is found pending in the snapshot
// and in the replayed log; a repeat resumes it with the same refund id and
// completes it once.
func TestPendingRefundSurvivesRestart(t *testing.T) {
	r := paidOrder(t)
	require.Contains(t, r.exec(RequestRefund{Ref: "ord_1", Reason: "ill"}), "refund.requested")

	for name, restart := range map[string]func() *Machine{
		"snapshot": func() *Machine {
			b, err := MarshalState(r.m.State())
			require.NoError(t, err)
			st, err := UnmarshalState(b)
			require.NoError(t, err)
			m := NewMachine("evt_1", testConfig(), newSeqIDs(7))
			m.Restore(st)
			return m
		},
		"log": func() *Machine {
			m := NewMachine("evt_1", testConfig(), newSeqIDs(7))
			for _, b := range r.log {
				ch, err := UnmarshalChange(b)
				require.NoError(t, err)
				m.Apply(ch)
			}
			return m
		},
	} {
		t.Run(name, func(t *testing.T) {
			m := restart()
			res, changes, err := m.Decide(r.now, RequestRefund{Ref: "ord_1", Amount: new(Money(1))})
			require.NoError(t, err)
			require.Empty(t, changes, "a repeat resumes the pending refund")
			start := res.(RefundStart)
			require.Equal(t, "rf_1", start.Refund.ID)
			require.Equal(t, RefundPending, start.Refund.Status)
			require.Equal(t, Money(10000), start.Refund.Amount, "the pending refund's amount, not the repeat's")

			_, changes, err = m.Decide(r.now, CompleteRefund{Ref: "ord_1", RefundID: "rf_1", Outcome: "succeeded"})
			require.NoError(t, err)
			for _, ch := range changes {
				m.Apply(ch)
			}
			o := m.State().Orders["ord_1"]
			require.Equal(t, OrderStatusRefunded, o.Status)
			require.Equal(t, RegCancelled, m.State().regs()[o.RegistrationID].Status)
			require.Equal(t, 0, m.State().Types["tt_1"].Confirmed, "the place is free")

			_, changes, err = m.Decide(r.now, CompleteRefund{Ref: "ord_1", RefundID: "rf_1", Outcome: "succeeded"})
			require.NoError(t, err)
			require.Empty(t, changes, "a second completion changes nothing")
		})
	}
}

// TestResumeOnlyResumes: RequestRefund with a ResumeID (the shell's
// resumer) answers that pending refund and changes nothing; once the
// refund is settled, or for another id, it is refused and never starts a
// new refund.
func TestResumeOnlyResumes(t *testing.T) {
	r := paidOrder(t)
	res, changes, err := r.m.Decide(r.now, RequestRefund{Ref: "ord_1", ResumeID: "rf_1"})
	require.Error(t, err, "nothing pending yet: %v %v", res, changes)
	require.Equal(t, FailedPrecondition, err.(*Error).Code)
	require.Empty(t, changes)

	require.Contains(t, r.exec(RequestRefund{Ref: "ord_1"}), "refund.requested")
	_, _, err = r.m.Decide(r.now, RequestRefund{Ref: "ord_1", ResumeID: "rf_other"})
	require.Error(t, err, "another id is not resumed")
	res, changes, err = r.m.Decide(r.now, RequestRefund{Ref: "ord_1", ResumeID: "rf_1"})
	require.NoError(t, err)
	require.Empty(t, changes)
	require.Equal(t, "rf_1", res.(RefundStart).Refund.ID)

	require.Contains(t, r.exec(CompleteRefund{Ref: "ord_1", RefundID: "rf_1", Outcome: "failed", Error: "declined"}), "refund.settled")
	_, changes, err = r.m.Decide(r.now, RequestRefund{Ref: "ord_1", ResumeID: "rf_1"})
	require.Error(t, err, "a settled refund is not resumed")
	require.Equal(t, FailedPrecondition, err.(*Error).Code)
	require.Empty(t, changes)
}
