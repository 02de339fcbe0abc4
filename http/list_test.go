package http

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ticketd/event"
)

func TestListEnvelope(t *testing.T) {
	b, err := json.Marshal(NewList[int](nil, false, ""))
	require.NoError(t, err)
	require.JSONEq(t, `{"data":[],"hasMore":false,"nextCursor":null}`, string(b))

	l := NewList([]string{"a", "b"}, true, "evt_9")
	b, err = json.Marshal(l)
	require.NoError(t, err)
	require.JSONEq(t, `{"data":["a","b"],"hasMore":true,"nextCursor":"`+EncodeCursor("evt_9")+`"}`, string(b))

	pos, err := DecodeCursor(*l.NextCursor)
	require.NoError(t, err)
	require.Equal(t, "evt_9", pos)
	pos, err = DecodeCursor("")
	require.NoError(t, err)
	require.Empty(t, pos)
	for _, bad := range []string{"!!!", "a", strings.Repeat("A", 600)} {
		_, err = DecodeCursor(bad)
		require.Error(t, err, bad)
		require.Equal(t, "cursor", err.(*event.Error).Details[0].Field)
	}
}

func TestListQueryThroughServer(t *testing.T) {
	h := newHarness(t, nil)
	r := h.do("GET", "/v1/events", skLive, "")
	require.Equal(t, 200, r.status)
	require.Equal(t, DefaultPageSize, r.result(t).Query.Limit)
	r = h.do("GET", "/v1/events?limit=7&cursor=abc&status=open&utm_source=x", skLive, "")
	require.Equal(t, 200, r.status, "unknown parameters are ignored")
	q := r.result(t).Query
	require.Equal(t, 7, q.Limit)
	require.Equal(t, "abc", q.Cursor)
	require.Equal(t, "open", q.Status)
	r = h.do("GET", "/v1/events?limit=0&status=nope", skLive, "")
	require.Equal(t, 400, r.status)
	require.Equal(t, []event.Detail{
		{Field: "limit", Reason: "must be at least 1"},
		{Field: "status", Reason: "must be one of: open, closed"},
	}, r.envelope(t).Details)
}
