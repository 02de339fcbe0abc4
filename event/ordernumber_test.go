package event

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// scriptedCodes is IDs whose codes come from a script, so a test can make
// the random source repeat itself.
type scriptedCodes struct {
	*seqIDs
	codes []string
}

func (s *scriptedCodes) Code(n int) string {
	if n == 8 && len(s.codes) > 0 {
		c := s.codes[0]
		s.codes = s.codes[1:]
		return c
	}
	return s.seqIDs.Code(n)
}

// TestOrderNumberRepeatIsDrawnAgain: when the random source repeats an
// order number already given, the order gets a fresh one, and each number
// finds its own order.
func TestOrderNumberRepeatIsDrawnAgain(t *testing.T) {
	ids := &scriptedCodes{seqIDs: newSeqIDs(1), codes: []string{"AAAAAAAA", "AAAAAAAA", "AAAAAAAA", "BBBBBBBB"}}
	m := NewMachine("evt_on", testConfig(), ids)
	now := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	start := Time{now.Add(720 * time.Hour)}
	step := func(c Command) any {
		t.Helper()
		return mustStep(t, m, now, c)
	}
	step(CreateEvent{Name: "N", Timezone: "UTC", StartsAt: &start})
	step(UpdateEvent{Status: Some(EventPublished)})
	step(CreateTicketType{Name: "GA"})
	step(UpdateTicketType{ID: "tt_1", Status: Some(SellOpen)})
	item := []OrderItem{{ItemType: ItemRegistrationType, ItemID: "tt_1", Quantity: 1}}

	first := step(PlaceOrder{Email: "a@example.com", Items: item}).(Order)
	second := step(PlaceOrder{Email: "b@example.com", Items: item}).(Order)
	require.Equal(t, "on-AAAAAAAA", first.OrderNumber)
	require.Equal(t, "on-BBBBBBBB", second.OrderNumber, "the repeated draws are refused")
	for _, o := range []Order{first, second} {
		got := step(GetOrder{Ref: o.OrderNumber}).(Order)
		require.Equal(t, o.ID, got.ID, "number %s finds its own order", o.OrderNumber)
	}
}
