package node

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"
)

// ShardSubject is the subject of shard's log.
func ShardSubject(shard int) string { return "ev." + strconv.Itoa(shard) + ".log" }

// ErrOldFormat is answered for a shard stream that holds messages of the
// per-event format of earlier versions.
var ErrOldFormat = errors.New("cluster: the event log holds the per-event format of an earlier version: start every node with an empty data dir")

// checkShardFormat refuses a shard stream with subjects other than its
// shard log's: the per-event subjects of an earlier version.
func checkShardFormat(ctx context.Context, js jetstream.JetStream, shard int) error {
	st, err := js.Stream(ctx, StreamName(shard))
	if err != nil {
		return fmt.Errorf("cluster: stream %s: %w", StreamName(shard), err)
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter("ev."+strconv.Itoa(shard)+".>"))
	if err != nil {
		return fmt.Errorf("cluster: stream %s: %w", StreamName(shard), err)
	}
	for subj := range info.State.Subjects {
		if subj != ShardSubject(shard) {
			return fmt.Errorf("%w (stream %s has subject %s)", ErrOldFormat, StreamName(shard), subj)
		}
	}
	return nil
}

// settledStreamConfig is the settled stream: one subject per event,
// rollups allowed (and atomic batches, for a rollup of several parts).
func settledStreamConfig(replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{Name: SettledStream, Subjects: []string{SettledSubj + ">"},
		Storage: jetstream.FileStorage, Replicas: replicas, MaxMsgSize: MaxMessageBytes,
		AllowRollup: true, AllowAtomicPublish: true}
}

// Names of the streams besides the shards': the settled stream (one
// subject per event, see package settle) and the snapshot store (the
// states in an object store, the seqs kept per event in a key-value
// bucket).
const (
	SettledStream = "TICKETD_SETTLED"
	SettledSubj   = "settled."
	SnapBucket    = "TICKETD_SNAPSHOTS"
	SnapIndex     = "TICKETD_SNAPINDEX"
)
