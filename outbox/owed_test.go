package outbox

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"ticketd/event"
)

type countIDs struct{ n int }

func (c *countIDs) New(prefix string) string { c.n++; return fmt.Sprintf("%s%d", prefix, c.n) }
func (c *countIDs) Code(n int) string        { c.n++; return fmt.Sprintf("%0*d", n, c.n) }

// TestFeedSeqOfLongFeeds: FeedSeq answers a long change's entries (a door
// batch's check-ins) from an index of the change, as the search entry by
// entry does: the first entry about an id, 0 for none, and never the
// index of the change before when the actor reuses the value and its
// buffer for the next one.
func TestFeedSeqOfLongFeeds(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 2))
	o := &Owed{EventID: "evt_1", Machine: event.NewMachine("evt_1", event.Config{}, &countIDs{})}
	buf := make([]event.FeedEntry, 0, 600)
	for seq := uint64(1); seq <= 200; seq++ {
		buf = buf[:0]
		for range r.IntN(600) {
			buf = append(buf, event.FeedEntry{Type: event.FeedCheckinCreated, ID: fmt.Sprintf("chk_%d", r.IntN(400)), At: time.Unix(0, 0)})
		}
		o.Seq, o.Feed = seq, buf
		first := o.Machine.FeedSeq() - uint64(len(buf)) + 1
		for range 50 {
			id := fmt.Sprintf("chk_%d", r.IntN(450))
			want := uint64(0)
			for i, e := range buf {
				if e.ID == id {
					want = first + uint64(i)
					break
				}
			}
			if got := o.FeedSeq(id); got != want {
				t.Fatalf("change %d (%d entries): FeedSeq(%s) = %d, want %d", seq, len(buf), id, got, want)
			}
		}
	}
}
