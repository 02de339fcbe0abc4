package bind

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
