package http_test

import (
	"context"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"ticketd/actors"
	"ticketd/directory"
)

// doorDeltaPath is the door's pass list (GET /door/v1/passes).
const doorDeltaPath = "/door/v1/passes"

// doorDevices creates n initialized devices of the benchmark's event and
// downloads the passes once: it returns their keys and the caught-up
// cursor (the last page's nextCursor).
func (fx *pipeFx) doorDevices(b *testing.B, n int) (keys []string, cursor string) {
	b.Helper()
	ctx := context.Background()
	k, ok := fx.sys.Directory().Lookup(fx.sk)
	require.True(b, ok)
	for i := range n {
		_, code, err := fx.sys.CreateDevice(ctx, actors.DeviceSpec{UnitID: k.UnitID, EventID: fx.eventID, Name: "gate " + strconv.Itoa(i),
			Doors: []directory.Door{{SubjectType: "event"}}})
		require.NoError(b, err)
		_, key, err := fx.sys.InitializeDevice(ctx, code, "")
		require.NoError(b, err)
		keys = append(keys, key)
	}
	// The first device's first download: its last page's cursor is caught up.
	return keys, scanBenchDownload(b, fx, keys[0])
}

// BenchmarkPipelineDoorDelta is door-sync's caught-up delta request (issue
// 33): a device's GET /door/v1/passes with the cursor of its last page,
// when nothing changed since (200, an empty page).
func BenchmarkPipelineDoorDelta(b *testing.B) {
	fx := newPipeFx(b, 10_000_000)
	fx.pipeRegistrations(b, 100)
	keys, cursor := fx.doorDevices(b, 1)
	uri := "http://127.0.0.1:8080" + doorDeltaPath + "?cursor=" + url.QueryEscape(cursor)
	auth := "Bearer " + keys[0]
	fx.pipeRun(b, 200, func(i int, r *fasthttp.Request) {
		r.SetRequestURI(uri)
		r.Header.Set("Authorization", auth)
	})
}
