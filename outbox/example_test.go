package outbox_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"ticketd/outbox"
	"ticketd/persistence"
)

// A sender settles each entry by itself: here "send" refuses addresses of
// one domain for now and one address for good; the rest are delivered.
func Example() {
	dir, _ := os.MkdirTemp("", "outbox-example")
	defer os.RemoveAll(dir)
	store, _ := persistence.Open(persistence.Options{Dir: dir, Logger: slog.New(slog.DiscardHandler)})
	defer store.Close()

	// A producer writes fresh entries under the inbox prefix.
	b := store.NewBatch()
	for _, to := range []string{"ada@example.com", "bob@greylist.example", "nobody@example.com"} {
		b.Put([]byte("note/"+to), []byte(to))
	}
	_ = store.Commit(b)
	b.Close()

	q, _ := outbox.NewQueue(store, "notes", "note/")
	now := time.Unix(1_800_000_000, 0)
	send := func(to string) (temporary bool, err error) {
		switch {
		case strings.HasSuffix(to, "@greylist.example"):
			return true, fmt.Errorf("450 greylisted")
		case to == "nobody@example.com":
			return false, fmt.Errorf("550 no such user")
		}
		return false, nil
	}
	round := func(ctx context.Context) (outbox.Round, error) {
		var fresh []outbox.Entry
		if _, err := q.Fresh(100, func(e outbox.Entry) { fresh = append(fresh, e) }); err != nil {
			return outbox.Round{}, err
		}
		for _, e := range fresh {
			b := store.NewBatch()
			temporary, err := send(string(e.Value))
			switch {
			case err == nil:
				q.Done(b, e)
			case temporary:
				_, _ = q.Retry(b, e, now.Add(outbox.Backoff(e.Attempts+1, time.Minute, time.Hour)), now, err.Error())
			default:
				_, _ = q.Park(b, e, now, err.Error())
			}
			if err := store.Commit(b); err != nil {
				return outbox.Round{}, err
			}
			b.Close()
		}
		return outbox.Round{}, nil
	}
	_, _ = round(context.Background()) // a Loop would run it when woken

	left, _ := q.List("", 10)
	for _, e := range left {
		fmt.Println(e.ID, e.State, e.Attempts, e.LastError)
	}
	// Output:
	// bob@greylist.example retrying 1 450 greylisted
	// nobody@example.com parked 1 550 no such user
}
