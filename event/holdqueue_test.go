package event

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestHoldQueueMatchesBruteForce drives placements, payments started
// (which extend holds), cancellations and expiries in random order and
// checks after every step that NextDeadline and the orders Expire lapses
// are exactly what a scan of every order says.
func TestHoldQueueMatchesBruteForce(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, seed))
			m := NewMachine("evt_hq", testConfig(), newSeqIDs(seed))
			now := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
			start := Time{now.Add(720 * time.Hour)}
			step := func(c Command) (any, error) { return step(m, now, c) }
			for _, c := range []Command{
				CreateEvent{Name: "H", Timezone: "UTC", StartsAt: &start},
				UpdateEvent{Status: Some(EventPublished)},
				CreateTicketType{Name: "GA", PriceAmount: 1000},
				UpdateTicketType{ID: "tt_1", Status: Some(SellOpen)},
			} {
				if _, err := step(c); err != nil {
					t.Fatal(err)
				}
			}
			var numbers []string
			for i := 0; i < 300; i++ {
				now = now.Add(time.Duration(rng.IntN(90)) * time.Second)
				switch r := rng.IntN(10); {
				case r < 5:
					res, err := step(PlaceOrder{Email: fmt.Sprintf("b%d@example.com", i), Items: []OrderItem{{ItemType: ItemRegistrationType, ItemID: "tt_1", Quantity: 1}}})
					if err == nil {
						numbers = append(numbers, res.(Order).OrderNumber)
					}
				case r < 7 && len(numbers) > 0:
					_, _ = step(ConfirmOrder{Ref: numbers[rng.IntN(len(numbers))], SuccessURL: "https://x.example/s", CancelURL: "https://x.example/c"})
				case r < 8 && len(numbers) > 0:
					_, _ = step(CancelOrder{Ref: numbers[rng.IntN(len(numbers))]})
				default:
					_, _ = step(Expire{Now: now})
				}
				want, wantOK := time.Time{}, false
				var due int
				for _, o := range m.s.Orders {
					if !o.holding() {
						continue
					}
					if !wantOK || o.HoldUntil.Before(want) {
						want, wantOK = o.HoldUntil, true
					}
					if !now.Before(o.HoldUntil) {
						due++
					}
				}
				got, gotOK := m.NextDeadline()
				if gotOK != wantOK || !got.Equal(want) {
					t.Fatalf("seed %d step %d: NextDeadline %v %v, want %v %v", seed, i, got, gotOK, want, wantOK)
				}
				if n := len(m.s.lapsedOrders(now)); n != due {
					t.Fatalf("seed %d step %d: %d lapsed, want %d", seed, i, n, due)
				}
			}
		})
	}
}
