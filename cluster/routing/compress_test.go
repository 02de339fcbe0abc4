package routing

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"ticketd/cluster/clustertest"
	"ticketd/cluster/eventlog"
	"ticketd/cluster/node"

	"github.com/stretchr/testify/require"
)

// TestCompressShardMessage: a compressed shard message reads as the
// message it was made from, is much smaller for a drop's alike records,
// and a damaged one is an error, not a panic.
func TestCompressShardMessage(t *testing.T) {
	b := &eventlog.Batch{}
	for i := range 200 {
		b.Append("evt_a", uint64(i+1), fmt.Appendf(nil, `order.placed ord_%06d buyer%d@example.com GA 1 EUR 2500 held`, i, i))
		b.Put(fmt.Appendf(nil, "ob/evt_a/hold/%06d", i), []byte("2026-11-28T10:00:00Z"))
	}
	data := append([]byte{eventlog.FormatV2, 'e'}, eventlog.AppendField(nil, []byte("evt_a"))...)
	data = append(data, b.Ops...)
	z := eventlog.CompressShard(data)
	require.Equal(t, byte(eventlog.FormatS2), z[0])
	require.Less(t, len(z), len(data)/3, "a drop's alike records compress (%d -> %d bytes)", len(data), len(z))

	read := func(d []byte) []eventlog.ShardOp {
		var ops []eventlog.ShardOp
		require.NoError(t, eventlog.DecodeShard(d, func(o eventlog.ShardOp) error {
			o.A, o.B = append([]byte(nil), o.A...), append([]byte(nil), o.B...)
			ops = append(ops, o)
			return nil
		}))
		return ops
	}
	plain := read(data)
	require.Len(t, plain, 400)
	require.Equal(t, plain, read(z))

	bad := append([]byte(nil), z...)
	for i := 1; i < len(bad); i += 7 {
		bad[i] ^= 0x5a
	}
	require.Error(t, eventlog.DecodeShard(bad, func(eventlog.ShardOp) error { return nil }))
	require.Error(t, eventlog.DecodeShard(z[:len(z)/2], func(eventlog.ShardOp) error { return nil }))
}

// TestShardMessagesCompressedOnceAllRead: shard messages are compressed
// once every node's heartbeat says it reads them, and a survivor replays
// an event from them; with a node of an earlier build in the cluster (it
// announces nothing), they stay as they were, readable to it.
func TestShardMessagesCompressedOnceAllRead(t *testing.T) {
	t.Parallel() // see parallelTests
	for _, old := range []bool{false, true} {
		t.Run(fmt.Sprintf("earlier build present %v", old), func(t *testing.T) {
			nodes, _ := clustertest.StartClusterWith(t, 3, func(i int, c *node.Config) { c.NoS2 = old && i == 2 })
			stacks := startStacksOn(t, nodes)
			require.Eventually(t, func() bool {
				for _, nd := range nodes {
					if len(nd.Nodes()) != 3 {
						return false
					}
				}
				return true
			}, 10*time.Second, 50*time.Millisecond)
			for _, nd := range nodes {
				require.Equal(t, !old, nd.Compress(), "%s", nd.Name())
			}
			evt := stacks[0].sys.NewEventID()
			tt := sellable(t, stacks[0].sys, evt, 1_000_000)
			var mu sync.Mutex
			var orders []string
			var wg sync.WaitGroup
			for c := range 16 {
				wg.Go(func() {
					for i := range 20 {
						o, err := placeOrder(bg, stacks[c%3].sys, evt, tt, c*100+i)
						require.NoError(t, err)
						mu.Lock()
						orders = append(orders, o.ID)
						mu.Unlock()
					}
				})
			}
			wg.Wait()

			// The shard's messages, as stored.
			shard := nodes[0].Shard(evt)
			ctx, cancel := context.WithTimeout(bg, 30*time.Second)
			defer cancel()
			st, err := nodes[0].JetStream().Stream(ctx, node.StreamName(shard))
			require.NoError(t, err)
			info, err := st.Info(ctx)
			require.NoError(t, err)
			formats := map[byte]int{}
			for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
				m, err := st.GetMsg(ctx, seq)
				if err != nil {
					continue // another subject's, or purged
				}
				if m.Subject == node.ShardSubject(shard) && len(m.Data) > 0 {
					formats[m.Data[0]]++
				}
			}
			t.Logf("shard messages by format: %v", formats)
			if old {
				require.Zero(t, formats[eventlog.FormatS2], "none compressed while a node cannot read them")
				return
			}
			require.Positive(t, formats[eventlog.FormatS2], "the batched commits' messages compressed")

			// A survivor loads the event from them.
			o := ownerIndex(t, stacks, evt)
			stacks[o].close()
			via := stacks[(o+1)%3].sys
			for _, id := range orders {
				require.Equal(t, id, orderWhenUp(t, ctx, via, evt, id, "order %s", id).ID)
			}
		})
	}
}
