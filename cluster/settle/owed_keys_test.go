package settle

import (
	"testing"

	"ticketd/cluster/clustertest"
	"ticketd/cluster/node"

	"github.com/stretchr/testify/require"
)

// TestReleaseDropsOtherOwnersEntries: a node drops from its local store
// the entries (fresh, and kept by their queue once tried) of the events of
// the shards it does not lead, and keeps those of the shards it leads and
// the directory's own mail.
func TestReleaseDropsOtherOwnersEntries(t *testing.T) {
	n := node.Detached(node.Config{Shards: 8})
	mine, other := "evt_mine", "evt_other"
	for i := 0; n.Shard(mine) == n.Shard(other); i++ {
		other = "evt_other" + string(rune('a'+i))
	}
	store := clustertest.OpenLocal(t)
	o := &Owed{Node: n, Store: store, Events: map[string]map[string]struct{}{}}
	keys := func(evt string) []string {
		return []string{
			"mail/" + evt + "/0000000000000001-0000",
			"obx/mail/s/" + evt + "/0000000000000002-0000",
			"obx/mail/d/00000000000000ff/" + evt + "/0000000000000002-0000",
			"hook/" + evt + "/0000000000000003-0001",
			"obx/hookfanout/s/" + evt + "/0000000000000004-0000",
			"refund/" + evt + "/rf_1",
			"checkout-close/" + evt + "/ord_1",
		}
	}
	directory := "mail/directory/0000000000000007-0000"
	b := store.NewBatch()
	for _, k := range append(append(keys(mine), keys(other)...), directory) {
		b.Put([]byte(k), []byte("v"))
	}
	require.NoError(t, store.Commit(b))
	b.Close()

	require.NoError(t, o.Release(func(shard int) bool { return shard == n.Shard(mine) }))
	for _, k := range append(keys(mine), directory) {
		_, ok, err := store.Get([]byte(k))
		require.NoError(t, err)
		require.True(t, ok, "kept %s", k)
	}
	for _, k := range keys(other) {
		_, ok, err := store.Get([]byte(k))
		require.NoError(t, err)
		require.False(t, ok, "dropped %s", k)
	}

	require.Equal(t, mine, owedEvent("mail/"+mine+"/0000000000000001-0000"))
	require.Equal(t, "", owedEvent(directory))
	require.Equal(t, "", owedEvent("evpub/"+mine))
}
