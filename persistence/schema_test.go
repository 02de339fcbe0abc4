package persistence

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSchemaListsEachPrefixOnce: no two schema entries claim the same
// keys, and each names its owner and gives a format that starts with its
// prefix.
func TestSchemaListsEachPrefixOnce(t *testing.T) {
	require.NoError(t, SchemaOverlaps())
	seen := map[string]bool{}
	for _, k := range Schema {
		require.False(t, seen[k.Prefix], "%q listed twice", k.Prefix)
		seen[k.Prefix] = true
		require.NotEmpty(t, k.Owner, k.Prefix)
		require.Truef(t, strings.HasPrefix(k.Format, k.Prefix), "format %q of %q", k.Format, k.Prefix)
	}
}

// TestCheckSchemaFindsStrayKeys: a store of log records, snapshots and
// schema keys passes; an index key no entry claims fails, named.
func TestCheckSchemaFindsStrayKeys(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer s.Close()
	b := s.NewBatch()
	b.Append("evt_1", 1, []byte("r"))
	b.Put([]byte(PrefixMailInbox+"evt_1/0000000000000001-0000"), []byte("{}"))
	b.Put([]byte(PrefixEventIndex+"evt_1"), []byte("bu_1"))
	b.SetSnapshotPart("evt_1", 1, 0, []byte("s"))
	require.NoError(t, s.Commit(b))
	require.NoError(t, s.CheckSchema(10))

	b = s.NewBatch()
	b.Put([]byte("stray/1"), []byte("x"))
	b.Put([]byte("mail"), []byte("x")) // "mail/" without its slash is not the inbox
	require.NoError(t, s.Commit(b))
	err = s.CheckSchema(10)
	require.ErrorIs(t, err, ErrSchema)
	require.ErrorContains(t, err, `"stray/1"`)
	require.ErrorContains(t, err, `"mail"`)
}
