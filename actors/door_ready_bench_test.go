package actors

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/event"
)

// BenchmarkFirstScanBatch times the first batch of 500 scans a door sends
// to an event of 100,000 registrations (20,000 under -short) just loaded
// (from its log, over Pebble without fsync): cold, the batch builds the
// door's tables in the actor and its asker finds no index; downloaded,
// the door downloaded its passes first (decisions §18), which got it
// ready. One op is one first batch of a fresh System; ms/batch is its
// wall time (resolution on the asker's goroutine and the actor's
// decision and commit).
func BenchmarkFirstScanBatch(b *testing.B) {
	regs := 100_000
	if testing.Short() {
		regs = 20_000
	}
	b.StopTimer()
	dir := b.TempDir()
	e := openBench(b, dir, nil)
	sd := newLogSeeder(b, e.store, e.cfg.Event)
	sd.register(regs)
	evt := sd.evt
	var ids []string
	page, _, err := event.DecideOp(sd.m, time.Now(), event.ListPasses{Limit: event.PassPageMax})
	require.NoError(b, err)
	for {
		for _, p := range page.Data {
			ids = append(ids, p.RegistrationID)
		}
		if !page.HasMore {
			break
		}
		page, _, err = event.DecideOp(sd.m, time.Now(), event.ListPasses{Limit: event.PassPageMax, Cursor: page.NextCursor})
		require.NoError(b, err)
	}
	e.close()
	next := 0
	for _, mode := range []string{"cold", "downloaded"} {
		b.Run(mode, func(b *testing.B) {
			var total time.Duration
			for i := 0; i < b.N; i++ {
				if next+500 > len(ids) {
					b.Skip("out of fresh passes")
				}
				e := openBenchNoSync(b, dir, func(c *Config) { c.SnapshotEvery = 1 << 30 })
				_, err := e.sys.Ask(bg, evt, event.GetEvent{})
				require.NoError(b, err)
				if mode == "downloaded" {
					for cursor := ""; ; {
						res, err := e.sys.Ask(bg, evt, event.ListPasses{Cursor: cursor, Limit: event.PassPageMax})
						require.NoError(b, err)
						p := res.(event.PassPage)
						if !p.HasMore {
							break
						}
						cursor = p.NextCursor
					}
					deadline := time.Now().Add(time.Minute)
					for {
						x, ok := e.sys.passes.Load(evt)
						if ok && x.(*passSlot).idx.Len() >= regs {
							break
						}
						require.True(b, time.Now().Before(deadline), "index not taken in")
						time.Sleep(time.Millisecond)
					}
				}
				c := event.RecordScans{DeviceID: fmt.Sprintf("dev_%d", i), Doors: []event.DoorRef{{SubjectType: "event"}}, Scans: make([]event.Scan, 500)}
				for j := range c.Scans {
					c.Scans[j] = event.Scan{ScanID: fmt.Sprintf("%s%d-%d", mode, i, j), RegistrationID: ids[next], SubjectType: "event",
						ScannedAt: event.At(time.Now())}
					next++
				}
				t0 := time.Now()
				res, err := Ask(bg, e.sys, evt, c)
				total += time.Since(t0)
				require.NoError(b, err)
				require.Equal(b, event.VerdictAdmitted, res.Results[0].Verdict)
				if mode == "downloaded" {
					require.Zero(b, e.sys.door.cold.Load())
				} else {
					require.Equal(b, int64(1), e.sys.door.cold.Load())
				}
				e.close()
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/batch")
		})
	}
}
