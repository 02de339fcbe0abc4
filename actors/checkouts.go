package actors

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// CheckoutClosePrefix is the key prefix of the index of hosted payment
// pages to close: an entry is written in the same batch as the
// OrderReleased that owes it (event.EffectCheckoutClose: an order stopped
// holding while its provider's page was open) and deleted by the closer
// once the provider answered (CheckoutClosed), so a crash in between
// leaves it to the next pass. Key: "checkout-close/" + event id + "/" +
// order id; value: a CheckoutToClose as JSON.
const CheckoutClosePrefix = "checkout-close/"

// CheckoutToClose is one entry of the index of pages to close.
type CheckoutToClose struct {
	EventID    string    `json:"eventId"`
	OrderID    string    `json:"orderId"`
	Ref        string    `json:"ref"`
	ReleasedAt time.Time `json:"releasedAt"`
}

// errStopScan ends a bounded scan early.
var errStopScan = errors.New("actors: scan bound reached")

func checkoutCloseKey(eventID, orderID string) []byte {
	return []byte(CheckoutClosePrefix + eventID + "/" + orderID)
}

// putCheckoutClose writes the entry of effect e into the open batch.
func (a *eventActor) putCheckoutClose(orderID, ref string, at time.Time) {
	v, err := json.Marshal(CheckoutToClose{EventID: a.id, OrderID: orderID, Ref: ref, ReleasedAt: at.UTC()})
	if err != nil {
		panic(fmt.Sprintf("actors: encode checkout to close: %v", err))
	}
	a.com.put(checkoutCloseKey(a.id, orderID), v)
}

// CheckoutsToClose lists at most limit pages still to close.
func (s *System) CheckoutsToClose(limit int) ([]CheckoutToClose, error) {
	var out []CheckoutToClose
	err := s.store.Scan([]byte(CheckoutClosePrefix), func(key, value []byte) error {
		if len(out) >= limit {
			return errStopScan
		}
		var c CheckoutToClose
		if err := json.Unmarshal(value, &c); err != nil {
			return fmt.Errorf("actors: checkout to close %q: %w", key, err)
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
func (s *System) CheckoutClosed(c CheckoutToClose) error {
	b := s.store.NewBatch()
	defer b.Close()
	b.Delete(checkoutCloseKey(c.EventID, c.OrderID))
	if err := s.store.Commit(b); err != nil {
		return fmt.Errorf("actors: checkout %s of order %s closed: %w", c.Ref, c.OrderID, err)
	}
	return nil
}
