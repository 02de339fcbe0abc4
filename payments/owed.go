package payments

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"ticketd/event"
	"ticketd/outbox"
	"ticketd/persistence"
)

// RefundPrefix is the key prefix of the pending-refund index: an entry is
// written in the same batch as the RefundRequested change that makes a
// refund pending and deleted in the batch of the RefundSettled that ends
// it (Owed), so the index holds exactly the refunds that are durably
// pending. A crash between a refund's request and the provider's answer
// leaves its entry, and the refund workflow's resumer (Refunds.Resume)
// finishes it after a restart. Key: "refund/" + event id + "/" + refund
// id; value: a PendingRefund as JSON.
const RefundPrefix = persistence.PrefixRefund

// PendingRefund is one entry of the pending-refund index.
type PendingRefund struct {
	EventID     string    `json:"eventId"`
	OrderID     string    `json:"orderId"`
	RefundID    string    `json:"refundId"`
	RequestedAt time.Time `json:"requestedAt"`
}

func refundKey(eventID, refundID string) []byte {
	return []byte(RefundPrefix + eventID + "/" + refundID)
}

// CheckoutClosePrefix is the key prefix of the index of hosted payment
// pages to close: an entry is written in the same batch as the
// OrderReleased that owes it (event.EffectCheckoutClose: an order stopped
// holding while its provider's page was open) and deleted by the Closer
// once the provider answered, so a crash in between leaves it to the next
// pass. Key: "checkout-close/" + event id + "/" + order id; value: a
// CheckoutToClose as JSON.
const CheckoutClosePrefix = persistence.PrefixCheckoutClose

// CheckoutToClose is one entry of the index of pages to close.
type CheckoutToClose struct {
	EventID    string    `json:"eventId"`
	OrderID    string    `json:"orderId"`
	Ref        string    `json:"ref"`
	ReleasedAt time.Time `json:"releasedAt"`
}

func checkoutCloseKey(eventID, orderID string) []byte {
	return []byte(CheckoutClosePrefix + eventID + "/" + orderID)
}

// Owed writes the payment work a change owes (the core's refund and
// checkout-close effects) into the change's batch: a pending refund's
// index entry and its deletion once settled, and a page to close. The
// event actors call it (actors.OwedWork, wired by app.Main). Its entries
// are read by Refunds.Resume and the Closer, which poll: it never asks for
// a wake.
type Owed struct{}

// Owe implements actors.OwedWork.
func (Owed) Owe(w persistence.KeyWriter, c *outbox.Owed) bool {
	for _, e := range c.Effects {
		switch e.Kind {
		case event.EffectRefundPending:
			v, err := json.Marshal(PendingRefund{EventID: c.EventID, OrderID: e.ID, RefundID: e.RefundID, RequestedAt: e.At.UTC()})
			if err != nil {
				panic(fmt.Sprintf("payments: encode pending refund: %v", err))
			}
			w.Put(refundKey(c.EventID, e.RefundID), v)
		case event.EffectRefundSettled:
			w.Delete(refundKey(c.EventID, e.RefundID))
		case event.EffectCheckoutClose:
			v, err := json.Marshal(CheckoutToClose{EventID: c.EventID, OrderID: e.ID, Ref: e.Ref, ReleasedAt: e.At.UTC()})
			if err != nil {
				panic(fmt.Sprintf("payments: encode checkout to close: %v", err))
			}
			w.Put(checkoutCloseKey(c.EventID, e.ID), v)
		}
	}
	return false
}

// PendingRefunds lists the refunds that are durably pending in store,
// oldest request first within an event.
func PendingRefunds(store *persistence.Store) ([]PendingRefund, error) {
	var out []PendingRefund
	err := store.Scan([]byte(RefundPrefix), func(key, value []byte) error {
		var p PendingRefund
		if err := json.Unmarshal(value, &p); err != nil {
			return fmt.Errorf("payments: pending refund %q: %w", key, err)
		}
		out = append(out, p)
		return nil
	})
	return out, err
}

// errStopScan ends a bounded scan early.
var errStopScan = errors.New("payments: scan bound reached")

// CheckoutsToClose lists at most limit pages of store still to close.
func CheckoutsToClose(store *persistence.Store, limit int) ([]CheckoutToClose, error) {
	var out []CheckoutToClose
	err := store.Scan([]byte(CheckoutClosePrefix), func(key, value []byte) error {
		if len(out) >= limit {
			return errStopScan
		}
		var c CheckoutToClose
		if err := json.Unmarshal(value, &c); err != nil {
			return fmt.Errorf("payments: checkout to close %q: %w", key, err)
		}
		out = append(out, c)
		return nil
	})
	if err == errStopScan {
		err = nil
	}
	return out, err
}

// CheckoutClosed deletes the entry of a page the provider closed (or
// found paid), durably.
func CheckoutClosed(store *persistence.Store, c CheckoutToClose) error {
	b := store.NewBatch()
	defer b.Close()
	b.Delete(checkoutCloseKey(c.EventID, c.OrderID))
	if err := store.Commit(b); err != nil {
		return fmt.Errorf("payments: checkout %s of order %s closed: %w", c.Ref, c.OrderID, err)
	}
	return nil
}
