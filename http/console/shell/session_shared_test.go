package shell

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/persistence"
)

// TestSharedSessionRecord: a session record round-trips through its byte
// format, and bad bytes are an error, never a panic.
func TestSharedSessionRecord(t *testing.T) {
	at := time.Unix(0, 1795600000123456789)
	for _, s := range []session{
		{Operator: true, csrf: randomToken(), created: at},
		{MemberID: "mem_01abc", csrf: randomToken(), created: at},
	} {
		got, err := decodeSession(encodeSession(&s))
		require.NoError(t, err)
		require.Equal(t, s.Operator, got.Operator)
		require.Equal(t, s.MemberID, got.MemberID)
		require.Equal(t, s.csrf, got.csrf)
		require.True(t, s.created.Equal(got.created))
	}
	good := encodeSession(&session{MemberID: "mem_1", csrf: "abc", created: at})
	for _, bad := range [][]byte{nil, {1}, {2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, good[:11], append([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 200}, "x"...)} {
		_, err := decodeSession(bad)
		require.Error(t, err, "%v", bad)
	}
}

// TestSharedSessionUnknownCookie: a cookie this console cannot have made
// is no session without a read of the cluster; a well-formed one the
// cluster does not know is read once, not on every request; a session
// started on another node (only in the cluster, not copied here yet) is
// found and used.
func TestSharedSessionUnknownCookie(t *testing.T) {
	st, err := persistence.Open(persistence.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	cluster := map[string][]byte{} // what the other nodes put
	reads := 0
	get := func(_ context.Context, key []byte) ([]byte, bool, error) {
		reads++
		v, ok := cluster[string(key)]
		return v, ok, nil
	}
	put := func(_ context.Context, key, value []byte, _ time.Duration) error {
		cluster[string(key)] = value
		b := st.NewBatch()
		defer b.Close()
		b.Put(key, value)
		return st.Commit(b)
	}
	now := time.Now()
	ss := &sharedSessions{store: localStore{st}, put: put, read: get, idle: time.Hour, abs: 24 * time.Hour,
		now: func() time.Time { return now }, log: slog.New(slog.NewTextHandler(io.Discard, nil)), touched: map[string]time.Time{}}

	for _, bad := range []string{"", "short", strings.Repeat("a", 42), strings.Repeat("a", 44), strings.Repeat("a", 42) + "!", strings.Repeat("é", 21) + "a"} {
		_, ok := ss.get(bad, now)
		require.False(t, ok, "%q", bad)
	}
	require.Zero(t, reads, "a malformed cookie reads nothing")

	made := randomToken()
	for range 5 {
		_, ok := ss.get(made, now)
		require.False(t, ok)
	}
	require.Equal(t, 1, reads, "an unknown cookie is read from the cluster once")

	// Started through another node: in the cluster only.
	other := randomToken()
	s := session{MemberID: "mem_1", csrf: randomToken(), created: now}
	cluster[sessPrefix+sessHash(other)] = encodeSession(&s)
	got, ok := ss.get(other, now)
	require.True(t, ok, "a session started elsewhere is found in the cluster")
	require.Equal(t, "mem_1", got.MemberID)
}

// localStore is the LocalStore app.Main hands over: the node's Pebble.
type localStore struct{ *persistence.Store }

func (l localStore) DeleteKeys(keys [][]byte) error {
	b := l.NewBatch()
	defer b.Close()
	for _, k := range keys {
		b.Delete(k)
	}
	return l.Commit(b)
}
