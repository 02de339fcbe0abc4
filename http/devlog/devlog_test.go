package devlog

import (
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	thttp "ticketd/http"
)

func TestDevLogRingKeepsTheNewestAndHonoursRetention(t *testing.T) {
	d := New(3, time.Hour)
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	for i := range 5 {
		rid := "req_" + itoa(i)
		d.notePath(rid, []byte("/v1/events/evt_"+itoa(i)))
		d.record(thttp.RequestInfo{Time: t0.Add(time.Duration(i) * time.Minute), Method: "GET", Path: "/v1/events/{eventId}",
			Surface: thttp.Developer, Status: 200 + i, KeyID: "key_1", UnitID: "bu_1", RequestID: rid,
			ClientIP: netip.MustParseAddr("10.0.0.1")})
	}
	// Admin requests and keyless ones are not a key's traffic.
	d.record(thttp.RequestInfo{Time: t0, Surface: thttp.Admin, KeyID: "admin", UnitID: "", RequestID: "x"})
	got, more := d.List("bu_1", Filter{}, 0, 10, t0.Add(10*time.Minute))
	require.False(t, more)
	require.Len(t, got, 3, "the ring keeps the newest 3")
	assert.Equal(t, []string{"rl_5", "rl_4", "rl_3"}, []string{got[0].ID, got[1].ID, got[2].ID})
	assert.Equal(t, "/v1/events/evt_4", got[0].Path)
	assert.Equal(t, "/v1/events/{eventId}", got[0].Route)
	assert.Equal(t, "10.0.0.1", got[0].ClientIP)

	page, more := d.List("bu_1", Filter{}, 0, 2, t0.Add(10*time.Minute))
	assert.True(t, more)
	rest, more := d.List("bu_1", Filter{}, 4, 2, t0.Add(10*time.Minute))
	assert.False(t, more)
	assert.Equal(t, "rl_3", rest[0].ID)
	assert.Len(t, page, 2)

	f, _ := d.List("bu_1", Filter{Status: 203}, 0, 10, t0.Add(10*time.Minute))
	require.Len(t, f, 1)
	assert.Equal(t, "rl_4", f[0].ID)
	old, _ := d.List("bu_1", Filter{}, 0, 10, t0.Add(63*time.Minute+30*time.Second))
	assert.Len(t, old, 1, "entries older than the retention are not listed")
	none, _ := d.List("bu_2", Filter{}, 0, 10, t0)
	assert.Empty(t, none)
	n := 0
	d.paths.Range(func(any, any) bool { n++; return true })
	assert.Zero(t, n, "no path outlives its request")
}

func itoa(n int) string { return strconv.Itoa(n) }

// A server-generated request id is kept as its number and formatted only
// when listed, as the Request-Id header carried it; the ring grows in
// chunks and wraps with paths short and long intact.
func TestDevLogFormatsGeneratedIDsAndKeepsPaths(t *testing.T) {
	d := New(200, time.Hour)
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	long := "/storefront/v1/events/evt_1/queue/" + strings.Repeat("x", 300)
	for i := range 450 {
		info := thttp.RequestInfo{Time: t0, Method: "GET", Path: "/storefront/v1/events/{publicId}/queue/{queueId}",
			Surface: thttp.Storefront, Status: 200, KeyID: "key_1", UnitID: "bu_1", RequestSeq: uint64(i + 1), RequestPrefix: "req_ab12",
			URLPath: "/storefront/v1/events/evt_1/queue/q_" + itoa(i)}
		if i%7 == 0 {
			info.URLPath = long + itoa(i)
		}
		if i == 449 {
			info.RequestID = "client-id"
		}
		d.record(info)
	}
	got, _ := d.List("bu_1", Filter{}, 0, 300, t0)
	require.Len(t, got, 200)
	assert.Equal(t, "client-id", got[0].RequestID)
	for k, e := range got[1:] {
		i := 448 - k
		assert.Equal(t, thttp.FormatRequestID("req_ab12", uint64(i+1)), e.RequestID)
		want := "/storefront/v1/events/evt_1/queue/q_" + itoa(i)
		if i%7 == 0 {
			want = long + itoa(i)
		}
		require.Equal(t, want, e.Path, "entry %d", i)
		assert.Equal(t, t0, e.CreatedAt.Time)
	}
	assert.Equal(t, "req_ab12_c", thttp.FormatRequestID("req_ab12", 12))
}
