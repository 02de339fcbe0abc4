package ops

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"ticketd/actors"
)

// Collector is the Prometheus collector of the actor system's and the
// store's counters (GET /metrics serves it).
func (o *Ops) Collector() prometheus.Collector {
	c := newSystemCollector(o.sys)
	c.views = &o.viewAnswers
	c.joinStats = &o.joinStats
	return c
}

// SystemCollector is the collector of sys's and its store's counters.
func SystemCollector(sys *actors.System) prometheus.Collector { return newSystemCollector(sys) }

// systemCollector reads the actor system's and the store's counters at
// scrape time; they are atomics, so a scrape never waits on an actor.
type systemCollector struct {
	sys *actors.System

	active, activations, passivations, snapshots, snapshotsPending *prometheus.Desc
	commits, records, bytes, commitErrors, syncs, syncSeconds      *prometheus.Desc
	stalls, stallSeconds, background                               *prometheus.Desc
	flushes, compactions, flushedBytes, compactedBytes             *prometheus.Desc
	compactionReadBytes, compactionSeconds, l0Sublevels, l0Files   *prometheus.Desc
	recordsPerCommit                                               *prometheus.Desc
	saleView                                                       *prometheus.Desc
	views                                                          *[2]atomic.Int64 // nil: not served
	joinBatches, joinsBatched                                      *prometheus.Desc
	joinStats                                                      *[2]atomic.Int64 // nil: not served
}

func newSystemCollector(sys *actors.System) *systemCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &systemCollector{
		sys:              sys,
		active:           d("ticketd_event_actors_active", "Event actors currently running (not passivated)."),
		activations:      d("ticketd_event_actor_activations_total", "Event actors started (state loaded from snapshot and log)."),
		passivations:     d("ticketd_event_actor_passivations_total", "Event actors stopped after being idle."),
		snapshots:        d("ticketd_snapshots_total", "Event snapshots saved."),
		snapshotsPending: d("ticketd_snapshots_pending", "Event snapshots asked for and not yet saved (queued or being built)."),
		commits:          d("ticketd_wal_commits_total", "Non-empty commits to the write-ahead log."),
		records:          d("ticketd_wal_records_total", "Records (changes and index entries) appended by those commits."),
		bytes:            d("ticketd_wal_bytes_total", "Encoded bytes of those commits."),
		commitErrors:     d("ticketd_wal_commit_errors_total", "Failed commits."),
		syncs:            d("ticketd_wal_syncs_total", "fsyncs of WAL files; records/syncs is the group-commit factor."),
		syncSeconds:      d("ticketd_wal_sync_seconds_total", "Time spent in those fsyncs; its rate near 1 means the syncs ran back to back."),
		saleView: prometheus.NewDesc("ticketd_sale_view_answers_total",
			"Requests answered from an event's published sale view without its actor (issue 34): kind=sold_out refusals, kind=queue_poll polls of waiting entries.",
			[]string{"kind"}, nil),
		joinBatches:         d("ticketd_queue_join_batches_total", "Batches of waiting-room joins sent to the events' actors (each one message and one log record)."),
		joinsBatched:        d("ticketd_queue_joins_batched_total", "Waiting-room joins sent in those batches; over the batches, joins per batch."),
		stalls:              d("ticketd_store_write_stalls_total", "Times the store stopped accepting writes (flushes or compactions behind)."),
		stallSeconds:        d("ticketd_store_write_stall_seconds_total", "Time the store spent with writes stopped."),
		background:          d("ticketd_store_background_jobs", "Memtable flushes and compactions in progress."),
		flushes:             d("ticketd_store_flushes_total", "Memtable flushes finished."),
		compactions:         d("ticketd_store_compactions_total", "Compactions finished (moves and delete-only ones included)."),
		flushedBytes:        d("ticketd_store_flushed_bytes_total", "Bytes written to level 0 tables by memtable flushes."),
		compactedBytes:      d("ticketd_store_compacted_bytes_total", "Bytes written to tables by compactions; over the flushed bytes, the write amplification compactions add."),
		compactionReadBytes: d("ticketd_store_compaction_read_bytes_total", "Bytes of tables read by compactions."),
		compactionSeconds:   d("ticketd_store_compaction_seconds_total", "Wall time compactions ran, summed over concurrent ones."),
		l0Sublevels:         d("ticketd_store_l0_sublevels", "Level 0 sublevels (read amplification; writes stall at Pebble's L0StopWritesThreshold)."),
		l0Files:             d("ticketd_store_l0_files", "Tables in level 0."),
		recordsPerCommit:    d("ticketd_wal_records_per_commit", "Records per commit (group-commit batch size)."),
	}
}

func (c *systemCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.active, c.activations, c.passivations, c.snapshots, c.snapshotsPending,
		c.commits, c.records, c.bytes, c.commitErrors, c.syncs, c.syncSeconds, c.stalls, c.stallSeconds, c.background, c.recordsPerCommit, c.saleView, c.joinBatches, c.joinsBatched,
		c.flushes, c.compactions, c.flushedBytes, c.compactedBytes, c.compactionReadBytes, c.compactionSeconds, c.l0Sublevels, c.l0Files} {
		ch <- d
	}
}

func (c *systemCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.sys.Metrics()
	ch <- prometheus.MustNewConstMetric(c.active, prometheus.GaugeValue, float64(c.sys.ActiveEvents()))
	ch <- prometheus.MustNewConstMetric(c.activations, prometheus.CounterValue, float64(m.Activations.Load()))
	ch <- prometheus.MustNewConstMetric(c.passivations, prometheus.CounterValue, float64(m.Passivations.Load()))
	ch <- prometheus.MustNewConstMetric(c.snapshots, prometheus.CounterValue, float64(m.Snapshots.Load()))
	ch <- prometheus.MustNewConstMetric(c.snapshotsPending, prometheus.GaugeValue, float64(m.SnapshotsPending.Load()))
	st := c.sys.Store()
	if st == nil {
		return
	}
	s := st.Stats()
	ch <- prometheus.MustNewConstMetric(c.commits, prometheus.CounterValue, float64(s.Commits))
	ch <- prometheus.MustNewConstMetric(c.records, prometheus.CounterValue, float64(s.Records))
	ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.CounterValue, float64(s.Bytes))
	ch <- prometheus.MustNewConstMetric(c.commitErrors, prometheus.CounterValue, float64(s.CommitErrors))
	ch <- prometheus.MustNewConstMetric(c.syncs, prometheus.CounterValue, float64(s.WALSyncs))
	ch <- prometheus.MustNewConstMetric(c.syncSeconds, prometheus.CounterValue, float64(s.WALSyncNanos)/1e9)
	ch <- prometheus.MustNewConstMetric(c.stalls, prometheus.CounterValue, float64(s.WriteStalls))
	if v := c.views; v != nil {
		ch <- prometheus.MustNewConstMetric(c.saleView, prometheus.CounterValue, float64(v[0].Load()), "sold_out")
		ch <- prometheus.MustNewConstMetric(c.saleView, prometheus.CounterValue, float64(v[1].Load()), "queue_poll")
	}
	if j := c.joinStats; j != nil {
		ch <- prometheus.MustNewConstMetric(c.joinBatches, prometheus.CounterValue, float64(j[0].Load()))
		ch <- prometheus.MustNewConstMetric(c.joinsBatched, prometheus.CounterValue, float64(j[1].Load()))
	}
	ch <- prometheus.MustNewConstMetric(c.stallSeconds, prometheus.CounterValue, float64(s.WriteStallNanos)/1e9)
	ch <- prometheus.MustNewConstMetric(c.background, prometheus.GaugeValue, float64(s.Flushes+s.Compactions))
	ch <- prometheus.MustNewConstMetric(c.flushes, prometheus.CounterValue, float64(s.FlushesDone))
	ch <- prometheus.MustNewConstMetric(c.compactions, prometheus.CounterValue, float64(s.CompactionsDone))
	ch <- prometheus.MustNewConstMetric(c.flushedBytes, prometheus.CounterValue, float64(s.FlushedBytes))
	ch <- prometheus.MustNewConstMetric(c.compactedBytes, prometheus.CounterValue, float64(s.CompactedBytes))
	ch <- prometheus.MustNewConstMetric(c.compactionReadBytes, prometheus.CounterValue, float64(s.CompactionReadBytes))
	ch <- prometheus.MustNewConstMetric(c.compactionSeconds, prometheus.CounterValue, float64(s.CompactionNanos)/1e9)
	ch <- prometheus.MustNewConstMetric(c.l0Sublevels, prometheus.GaugeValue, float64(s.L0Sublevels))
	ch <- prometheus.MustNewConstMetric(c.l0Files, prometheus.GaugeValue, float64(s.L0Files))
	// Bucket i of Stats counts commits of (2^(i-1), 2^i] records; the last
	// bucket is open-ended, so it only feeds +Inf (the total count).
	buckets := make(map[float64]uint64, len(s.RecordsPerCommit)-1)
	var cum, count uint64
	for i, n := range s.RecordsPerCommit {
		count += n
		if i < len(s.RecordsPerCommit)-1 {
			cum += n
			buckets[float64(uint64(1)<<i)] = cum
		}
	}
	ch <- prometheus.MustNewConstHistogram(c.recordsPerCommit, count, float64(s.Records), buckets)
}
