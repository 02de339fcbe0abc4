package actors

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/ask"
	"ticketd/directory"
	"ticketd/event"
)

// recordKey is the index entry the tests' recorder puts for an email.
func recordKey(email string) []byte { return []byte("test-idem/" + email) }

// regRecorder records the registration id a write answered under its
// email, as an Idempotency-Key's record holds the answer.
func regRecorder(email string) *ask.Recorder {
	return &ask.Recorder{Key: recordKey(email), Value: func(res any) []byte {
		r, ok := res.(event.RegistrationResult)
		if !ok {
			return nil
		}
		return []byte(r.ID)
	}}
}

// TestRecorderCommitsAtomicallyWithTheWrite floods an event with
// registrations, each asked with a Recorder, and crashes the filesystem
// mid-flood keeping a random half of what was not synced. After the
// restart on what the disk kept, a registration is there exactly when its
// record is, with the id the write answered, and every registration
// answered before the crash is there with its record: the record can
// neither outlive its write nor be lost while the write stays.
func TestRecorderCommitsAtomicallyWithTheWrite(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	e := newFaultEnv(t, 0)
	evt, tt := newFaultEvent(t, e.sys)

	var (
		mu      sync.Mutex
		acked   = map[string]string{} // email -> registration id
		crashed *vfs.MemFS
		stop    = make(chan struct{})
		wg      sync.WaitGroup
	)
	for c := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				email := fmt.Sprintf("c%d-%d@example.com", c, i)
				res, err := e.sys.Ask(ask.WithRecorder(bg, regRecorder(email)), evt,
					event.CreateRegistration{Email: email, RegistrationTypeID: tt})
				if err != nil {
					t.Errorf("ask: %v", err)
					return
				}
				mu.Lock()
				if crashed == nil { // answered before the crash
					acked[email] = res.(event.RegistrationResult).ID
				}
				mu.Unlock()
			}
		}()
	}
	want := 100 + rng.IntN(400)
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		if len(acked) >= want || time.Now().After(deadline) {
			crashed = e.mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 50, RNG: rng})
			mu.Unlock()
			break
		}
		mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	require.NoError(t, e.sys.Close())
	require.NoError(t, e.store.Close())

	e.open(crashed, 0)
	defer func() {
		require.NoError(t, e.sys.Close())
		require.NoError(t, e.store.Close())
	}()
	regs := registrationsOf(t, e.sys, evt)
	byEmail := map[string]string{}
	for _, r := range regs {
		byEmail[r.Email] = r.ID
		v, ok, err := e.store.Get(recordKey(r.Email))
		require.NoError(t, err)
		require.True(t, ok, "registration %s kept without its record", r.Email)
		assert.Equal(t, r.ID, string(v), "the record holds the write's answer")
	}
	records := 0
	require.NoError(t, e.store.Scan([]byte("test-idem/"), func(k, v []byte) error {
		records++
		email := string(k[len("test-idem/"):])
		assert.Equal(t, byEmail[email], string(v), "record %s kept without its registration", email)
		return nil
	}))
	for email, id := range acked {
		assert.Equal(t, id, byEmail[email], "acknowledged registration %s lost", email)
	}
	t.Logf("%d answered before the crash, %d registrations and %d records after it", len(acked), len(regs), records)
	assert.Equal(t, len(regs), records)
	assert.GreaterOrEqual(t, len(regs), len(acked))
}

// TestRecorderOnlyForWrites: a request that changes nothing (a repeat
// registration, a rejection, a read) calls its Recorder not, so its key
// is stored by the answer's own write, as before; a directory write puts
// the record in its batch too, and a created key's recorder sees the
// whole key.
func TestRecorderOnlyForWrites(t *testing.T) {
	e := newFaultEnv(t, 0)
	evt, tt := newFaultEvent(t, e.sys)
	never := ask.WithRecorder(bg, &ask.Recorder{Key: recordKey("never"), Value: func(res any) []byte {
		t.Errorf("recorder called for a request that changed nothing: %T", res)
		return nil
	}})
	_, err := e.sys.Ask(ask.WithRecorder(bg, regRecorder("a@example.com")), evt, event.CreateRegistration{Email: "a@example.com", RegistrationTypeID: tt})
	require.NoError(t, err)
	res, err := e.sys.Ask(never, evt, event.CreateRegistration{Email: "a@example.com", RegistrationTypeID: tt})
	require.NoError(t, err)
	require.False(t, res.(event.RegistrationResult).Created, "a repeat")
	_, err = e.sys.Ask(never, evt, event.CreateRegistration{Email: "b@example.com", RegistrationTypeID: "tt_missing"})
	require.Error(t, err, "a rejection")
	_, err = e.sys.Ask(never, evt, event.ListRegistrations{Limit: 1})
	require.NoError(t, err)

	unit, err := e.sys.CreateUnit(ask.WithRecorder(bg, &ask.Recorder{Key: []byte("test-idem/unit"), Value: func(res any) []byte {
		return []byte(res.(directory.Unit).ID)
	}}), "Acme")
	require.NoError(t, err)
	var secret string
	_, secret, err = e.sys.CreateKey(ask.WithRecorder(bg, &ask.Recorder{Key: []byte("test-idem/key"), Value: func(res any) []byte {
		ck := res.(CreatedKey)
		return []byte(ck.Key.ID + " " + ck.Secret)
	}}), NewKeySpec{UnitID: unit.ID, Type: directory.Secret, Name: "k"})
	require.NoError(t, err)

	// What the disk holds once synced: both records, with their writes.
	require.NoError(t, e.sys.Close())
	require.NoError(t, e.store.Close())
	e.restart()
	v, ok, err := e.store.Get([]byte("test-idem/unit"))
	require.NoError(t, err)
	require.True(t, ok)
	_, found := e.sys.Directory().Unit(string(v))
	assert.True(t, found)
	v, ok, err = e.store.Get([]byte("test-idem/key"))
	require.NoError(t, err)
	require.True(t, ok)
	assert.Contains(t, string(v), secret, "the record holds the whole key the answer gives")
}

// TestRecorderReplaysAWriteMadeBefore: a request whose Recorder's record
// exists (made by an earlier write of the same key, durable or still in a
// batch in flight) is answered Replayed with that record and decides
// nothing; one whose record is no longer live is decided anew.
func TestRecorderReplaysAWriteMadeBefore(t *testing.T) {
	e := newFaultEnv(t, 0)
	defer func() {
		require.NoError(t, e.sys.Close())
		require.NoError(t, e.store.Close())
	}()
	evt, tt := newFaultEvent(t, e.sys)
	reg := func(rec *ask.Recorder, email string) (any, error) {
		rec.Look = true // claimed again: the actor looks in the store too
		return e.sys.Ask(ask.WithRecorder(bg, rec), evt, event.CreateRegistration{Email: email, RegistrationTypeID: tt})
	}
	res, err := reg(regRecorder("first@example.com"), "first@example.com")
	require.NoError(t, err)
	id := res.(event.RegistrationResult).ID
	_, err = reg(regRecorder("first@example.com"), "second@example.com")
	r, ok := ask.IsReplayed(err)
	require.True(t, ok, "the key's write was made: %v", err)
	assert.Equal(t, id, string(r.Value))

	// Twenty at once with one key: the first writes, the others meet its
	// record in the batch not yet durable, or in the store.
	var wg sync.WaitGroup
	var mu sync.Mutex
	made, replayed := 0, 0
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := reg(regRecorder("burst@example.com"), fmt.Sprintf("burst%d@example.com", i))
			mu.Lock()
			defer mu.Unlock()
			if _, ok := ask.IsReplayed(err); ok {
				replayed++
			} else if assert.NoError(t, err) {
				made++
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 1, made)
	assert.Equal(t, 19, replayed)
	regs := registrationsOf(t, e.sys, evt)
	assert.Len(t, regs, 2, "nothing decided twice")

	dead := regRecorder("first@example.com")
	dead.Live = func([]byte) bool { return false }
	_, err = reg(dead, "third@example.com")
	require.NoError(t, err, "an expired record answers nothing")

	// A key never claimed before has no record anywhere: the actor does
	// not read the store for it (only its batches in flight).
	fresh := regRecorder("first@example.com")
	_, err = e.sys.Ask(ask.WithRecorder(bg, fresh), evt, event.CreateRegistration{Email: "fourth@example.com", RegistrationTypeID: tt})
	require.NoError(t, err, "not looked up in the store")
}
