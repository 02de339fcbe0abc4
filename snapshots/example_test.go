package snapshots_test

import (
	"fmt"
	"log"

	"github.com/cockroachdb/pebble/v2/vfs"

	"ticketd/persistence"
	"ticketd/snapshots"
)

// Example shows recovery as the actor does it: the newest snapshot, then the
// log records after it.
func Example() {
	db, err := persistence.Open(persistence.Options{Dir: "data", FS: vfs.NewMem()})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	snaps := snapshots.New(db, 2)

	b := db.NewBatch()
	for seq := uint64(1); seq <= 5; seq++ {
		b.Append("evt_1", seq, []byte(fmt.Sprintf("change %d", seq)))
	}
	if err := db.Commit(b); err != nil {
		log.Fatal(err)
	}
	b.Close()
	// A snapshot of the state through record 3; the log behind the oldest
	// kept snapshot goes in the same atomic batch.
	through, err := snaps.SaveAndTrim("evt_1", 3, []byte("state after 3 changes"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("trimmed through", through)

	seq, state, ok, err := snaps.LoadNewest("evt_1")
	if err != nil || !ok {
		log.Fatal(ok, err)
	}
	fmt.Printf("snapshot %d: %s\n", seq, state)
	_ = db.Replay("evt_1", seq, func(seq uint64, rec []byte) error {
		fmt.Printf("replay %d: %s\n", seq, rec)
		return nil
	})
	// Output:
	// trimmed through 3
	// snapshot 3: state after 3 changes
	// replay 4: change 4
	// replay 5: change 5
}
