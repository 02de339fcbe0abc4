package api_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDoorCaughtUpPolls: a device polling with its caught-up cursor is
// answered from what its key's first request found (its Principal, its
// last-seen cell, the cursor it was last caught up with: issue 33), and
// none of it outlives what it stands for: a revoked key is refused on the
// very next poll, a pass that changes ends the caught-up answers, the
// device's last-seen time still moves, and every answer has its own
// request id.
func TestDoorCaughtUpPolls(t *testing.T) {
	f := newAPIFx(t)
	x := newDoorFx(t, f)
	id, dev, _ := doorDeviceKey(t, f, x.u, x.eventID, nil)

	cursorOf := func() string {
		m := apiWant(t, dev.Do("GET", "/door/v1/passes", nil), 200)
		require.Equal(t, false, m["hasMore"])
		return apiS(m, "nextCursor")
	}
	cur := cursorOf()
	page := `{"data":[],"hasMore":false,"nextCursor":"` + cur + `"}`
	seen := map[string]bool{}
	poll := func(query string) *apiResp {
		t.Helper()
		r := dev.AllowInvalidRequest().Do("GET", "/door/v1/passes?"+query, nil)
		rid := r.Header.Get("Request-Id")
		require.NotEmpty(t, rid)
		require.False(t, seen[rid], "request id %s answered twice", rid)
		seen[rid] = true
		return r
	}
	for range 3 {
		r := poll("cursor=" + cur)
		require.Equal(t, 200, r.Status)
		require.Equal(t, page, string(r.Body), "the same bytes every poll")
	}

	t.Run("the query is read as the parsed query reads it", func(t *testing.T) {
		for _, q := range []string{
			"limit=5&cursor=" + cur, "cursor=" + cur + "&limit=1000", "x=1&&cursor=" + cur + "&cursor=garbage",
			"%63ursor=" + cur, // an escaped key: the parsed query decodes it
			"cursor=" + cur + "&lim%69t=7",
		} {
			r := poll(q)
			require.Equal(t, 200, r.Status, "%s: %s", q, r.Body)
			require.Equal(t, page, string(r.Body), q)
		}
		apiWant400(t, poll("cursor=garbage&cursor="+cur), "cursor")
		apiWant400(t, poll("cursor="+cur+"&limit=0"), "limit")
		apiWant400(t, poll("cursor="+cur+"&l%69mit=x"), "limit")
	})

	t.Run("last seen still moves, at most once a second", func(t *testing.T) {
		lastSeen := func() time.Time {
			d := apiWant(t, x.u.dev.Do("GET", "/v1/events/"+x.eventID+"/devices/"+id, nil), 200)
			at, err := time.Parse(time.RFC3339Nano, apiS(d, "lastSeenAt"))
			require.NoError(t, err)
			return at
		}
		before := lastSeen()
		time.Sleep(1100 * time.Millisecond)
		start := time.Now().Add(-time.Second) // the answer's clock is seconds in the wire form
		require.Equal(t, 200, poll("cursor="+cur).Status)
		after := lastSeen()
		require.True(t, after.After(before), "last seen %s, then %s", before, after)
		require.False(t, after.Before(start), "last seen %s, the poll at about %s", after, start)
	})

	t.Run("a changed pass ends the caught-up answers", func(t *testing.T) {
		apiWant(t, x.u.dev.Do("POST", "/v1/events/"+x.eventID+"/checkins", map[string]any{"registrationId": x.regs[0]["id"], "subjectType": "event"}), 201)
		m := apiWant(t, poll("cursor="+cur), 200)
		data := apiData(t, m)
		require.Len(t, data, 1)
		require.Equal(t, x.regs[0]["id"], data[0]["registrationId"])
		next := apiS(m, "nextCursor")
		require.NotEqual(t, cur, next)
		// The old cursor never answers caught up again; the new one does.
		require.Len(t, apiData(t, apiWant(t, poll("cursor="+cur), 200)), 1)
		for range 2 {
			r := poll("cursor=" + next)
			require.Equal(t, `{"data":[],"hasMore":false,"nextCursor":"`+next+`"}`, string(r.Body))
		}
		cur = next
	})

	t.Run("a revoked key is refused on the very next poll", func(t *testing.T) {
		require.Equal(t, 200, poll("cursor="+cur).Status)
		apiWant(t, x.u.dev.Do("POST", "/v1/events/"+x.eventID+"/devices/"+id+"/revoke", nil), 200)
		apiWantErr(t, poll("cursor="+cur), 401, "UNAUTHENTICATED")
		// The other device, on the same event, still polls.
		r := x.dev.Do("GET", "/door/v1/passes?cursor="+cur, nil)
		require.Equal(t, 200, r.Status)
		require.Equal(t, `{"data":[],"hasMore":false,"nextCursor":"`+cur+`"}`, string(r.Body))
	})
}
