package http_test

import (
	"context"
	"encoding/json"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"ticketd/actors"
	"ticketd/directory"
)

// BenchmarkPipelineDoorDelta is door-sync's caught-up delta request (issue
// 33): a device's GET /door/v1/passes with the cursor of its last page,
// when nothing changed since (200, an empty page).
func BenchmarkPipelineDoorDelta(b *testing.B) {
	fx := newPipeFx(b, 10_000_000)
	fx.pipeRegistrations(b, 100)
	ctx := context.Background()
	k, ok := fx.sys.Directory().Lookup(fx.sk)
	require.True(b, ok)
	_, code, err := fx.sys.CreateDevice(ctx, actors.DeviceSpec{UnitID: k.UnitID, EventID: fx.eventID, Name: "gate",
		Doors: []directory.Door{{SubjectType: "event"}}})
	require.NoError(b, err)
	_, key, err := fx.sys.InitializeDevice(ctx, code, "")
	require.NoError(b, err)
	// The device's first download: its last page's cursor is caught up.
	base := "http://127.0.0.1:8080/door/v1/passes"
	cursor := ""
	for {
		var r fasthttp.Request
		var rc fasthttp.RequestCtx
		u := base
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
			break
		}
	}
	uri := base + "?cursor=" + url.QueryEscape(cursor)
	auth := "Bearer " + key
	fx.pipeRun(b, 200, func(i int, r *fasthttp.Request) {
		r.SetRequestURI(uri)
		r.Header.Set("Authorization", auth)
	})
}
