package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"ticketd/actors"
	"ticketd/directory"
)

// scanBenchDevices is how many devices BenchmarkPipelineDoorScans sends
// from (door-sync: 50; a few suffice for the cost per batch).
const scanBenchDevices = 4

// BenchmarkPipelineDoorScans is door-sync's batched scan (issue 33): a
// device's POST /door/v1/scans of 500 offline scans through the real
// router, device auth, parser, the event's actor over Pebble (NoSync) and
// the answer's JSON. Each batch holds 400 passes new to the door and 100
// another device checked in before the clock started (20% repeats); the
// devices downloaded their passes first, as door-sync's do. One op is one
// batch; cpu-ns/op is the process's CPU per batch (every goroutine). Run
// it with -benchtime=Nx (it registers N*400 passes first).
//
//	go test ./http -run '^$' -bench PipelineDoorScans -benchtime=40x -benchmem
func BenchmarkPipelineDoorScans(b *testing.B) {
	fx := newPipeFx(b, 10_000_000)
	const fresh, repeats, warm = 400, 100, 2000
	n := b.N
	ids := fx.pipeRegistrations(b, warm+n*fresh)
	ctx := context.Background()
	k, ok := fx.sys.Directory().Lookup(fx.sk)
	require.True(b, ok)
	keys := make([]string, scanBenchDevices)
	for d := range keys {
		_, code, err := fx.sys.CreateDevice(ctx, actors.DeviceSpec{UnitID: k.UnitID, EventID: fx.eventID, Name: fmt.Sprintf("gate %d", d),
			Doors: []directory.Door{{SubjectType: "event"}}})
		require.NoError(b, err)
		_, keys[d], err = fx.sys.InitializeDevice(ctx, code, "")
		require.NoError(b, err)
		scanBenchDownload(b, fx, keys[d])
	}
	scanned := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	body := func(batch string, regs []string) []byte {
		var sb strings.Builder
		sb.WriteString(`{"scans":[`)
		for i, reg := range regs {
			if i > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `{"scanId":"%s-%d","registrationId":"%s","subjectType":"event","scannedAt":"%s","offline":true}`, batch, i, reg, scanned)
		}
		sb.WriteString(`]}`)
		return []byte(sb.String())
	}
	uri := "http://127.0.0.1:8080/door/v1/scans"
	post := func(key string, body []byte) []byte {
		var r fasthttp.Request
		var rc fasthttp.RequestCtx
		pipePost(&r, uri, key)
		r.SetBody(body)
		rc.Init(&r, fx.addr, nil)
		fx.h(&rc)
		require.Equal(b, 200, rc.Response.StatusCode(), "%s", rc.Response.Body())
		return append([]byte(nil), rc.Response.Body()...)
	}
	// Untimed: the first warm passes checked in by device 0 (the repeats
	// name them), which builds what a door's first batches build.
	for i := 0; i < warm; i += 500 {
		post(keys[0], body(fmt.Sprintf("w%d", i), ids[i:i+500]))
	}
	bodies := make([][]byte, n)
	for i := range bodies {
		regs := make([]string, 0, fresh+repeats)
		for j := range fresh + repeats {
			if j%5 == 4 {
				regs = append(regs, ids[(i*131+j*7919)%warm])
			} else {
				regs = append(regs, ids[warm+i*fresh+len(regs)-len(regs)/5])
			}
		}
		bodies[i] = body(fmt.Sprintf("b%d", i), regs)
	}
	// A batch of warm passes from another device: every one already checked in.
	last := post(keys[1], body("check", append(append([]string(nil), ids[warm-400:warm]...), ids[:100]...)))
	var res struct {
		Results []struct {
			Verdict string `json:"verdict"`
		} `json:"results"`
	}
	require.NoError(b, json.Unmarshal(last, &res))
	require.Len(b, res.Results, 500)
	for _, r := range res.Results {
		require.Equal(b, "already_checked_in", r.Verdict)
	}
	runtime.GC()
	// SCAN_BENCH_HEAP=file writes the heap profile (cumulative
	// allocations) to file.base before the timed batches: go tool pprof
	// -base file.base of -memprofile's profile is the timed batches' own.
	if f := os.Getenv("SCAN_BENCH_HEAP"); f != "" && b.N > 1 {
		w, err := os.Create(f + ".base")
		require.NoError(b, err)
		require.NoError(b, pprof.Lookup("allocs").WriteTo(w, 0))
		require.NoError(b, w.Close())
	}
	// SCAN_BENCH_CPU=file profiles the timed batches' CPU alone (run it
	// without -cpuprofile).
	if f := os.Getenv("SCAN_BENCH_CPU"); f != "" && b.N > 1 {
		w, err := os.Create(f)
		require.NoError(b, err)
		require.NoError(b, pprof.StartCPUProfile(w))
		defer func() {
			pprof.StopCPUProfile()
			require.NoError(b, w.Close())
		}()
	}
	fx.pipeRun(b, 200, func(i int, r *fasthttp.Request) {
		pipePost(r, uri, keys[1+i%(scanBenchDevices-1)])
		r.SetBody(bodies[i])
	})
}

// scanBenchDownload downloads every pass with device key key, as a door
// does before it scans, and returns the caught-up cursor (the last page's
// nextCursor).
func scanBenchDownload(b *testing.B, fx *pipeFx, key string) (cursor string) {
	b.Helper()
	for {
		var r fasthttp.Request
		var rc fasthttp.RequestCtx
		u := "http://127.0.0.1:8080" + doorDeltaPath
		if cursor != "" {
			u += "?cursor=" + url.QueryEscape(cursor)
		}
		r.SetRequestURI(u)
		r.Header.Set("Authorization", "Bearer "+key)
		rc.Init(&r, fx.addr, nil)
		fx.h(&rc)
		require.Equal(b, 200, rc.Response.StatusCode(), "%s", rc.Response.Body())
		var page struct {
			HasMore    bool   `json:"hasMore"`
			NextCursor string `json:"nextCursor"`
		}
		require.NoError(b, json.Unmarshal(rc.Response.Body(), &page))
		cursor = page.NextCursor
		if !page.HasMore {
			return cursor
		}
	}
}
