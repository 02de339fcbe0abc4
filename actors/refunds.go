package actors

import (
	"encoding/json"
	"fmt"
	"time"
)

// RefundPrefix is the key prefix of the pending-refund index: an entry is
// written in the same batch as the RefundRequested change that makes a
// refund pending and deleted in the batch of the RefundSettled that ends
// it, so the index holds exactly the refunds that are durably pending. A
// crash between a refund's request and the provider's answer leaves its
// entry, and the refund workflow's resumer (payments.Refunds.Resume) finishes it
// after a restart. Key: "refund/" + event id + "/" + refund id.
const RefundPrefix = "refund/"

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

// PendingRefunds lists the refunds that are durably pending, oldest
// request first within an event.
func (s *System) PendingRefunds() ([]PendingRefund, error) {
	var out []PendingRefund
	err := s.store.Scan([]byte(RefundPrefix), func(key, value []byte) error {
		var p PendingRefund
		if err := json.Unmarshal(value, &p); err != nil {
			return fmt.Errorf("actors: pending refund %q: %w", key, err)
		}
		out = append(out, p)
		return nil
	})
	return out, err
}
