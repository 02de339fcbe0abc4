package persistence_test

import (
	"fmt"
	"log"

	"github.com/cockroachdb/pebble/v2/vfs"

	"ticketd/persistence"
)

// Example shows the life of a stream: appends with an index entry in one
// durable batch, replay after a position, and a trim.
func Example() {
	s, err := persistence.Open(persistence.Options{Dir: "data", FS: vfs.NewMem()})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	b := s.NewBatch()
	b.Append("evt_1", 1, []byte("created"))
	b.Append("evt_1", 2, []byte("published"))
	b.Put([]byte("event/evt_1"), []byte("unit_1"))
	err = s.Commit(b) // returns once fsynced
	b.Close()
	if err != nil {
		log.Fatal(err)
	}

	_ = s.Replay("evt_1", 1, func(seq uint64, rec []byte) error {
		fmt.Printf("%d %s\n", seq, rec)
		return nil
	})
	if err := s.Trim("evt_1", 1); err != nil {
		log.Fatal(err)
	}
	first, _ := s.FirstSeq("evt_1")
	last, _ := s.LastSeq("evt_1")
	unit, _, _ := s.Get([]byte("event/evt_1"))
	fmt.Println(first, last, string(unit))
	// Output:
	// 2 published
	// 2 2 unit_1
}
