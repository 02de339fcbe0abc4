package api_test

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ticketd/app"
)

// doorFx is an event with a venue, two confirmed registrations, one
// cancelled, and a device for every door, initialized.
type doorFx struct {
	u       apiUnit
	eventID string
	venueID string
	regs    []map[string]any // confirmed a, confirmed b, cancelled c
	dev     *apiClient       // device key client
	devID   string
	key     string
}

func newDoorFx(t *testing.T, f *apiFx) doorFx {
	t.Helper()
	u := f.unit(t)
	x := doorFx{u: u, eventID: apiPublished(t, u.dev)}
	x.venueID = f.apiProgram(t, x.eventID, "venues", map[string]any{"name": "Hall"})
	tt := apiOpenType(t, u.dev, x.eventID, nil)
	for _, e := range []string{"a@door.io", "b@door.io", "c@door.io"} {
		x.regs = append(x.regs, apiRegister(t, u.dev, x.eventID, tt, e))
	}
	apiWant(t, u.dev.Do("POST", "/v1/events/"+x.eventID+"/registrations/"+apiS(x.regs[2], "id")+"/cancel", nil), 200)
	x.devID, x.dev, x.key = doorDeviceKey(t, f, u, x.eventID, nil)
	return x
}

// doorDevice creates and initializes a device; it returns its id and a
// client with its key.
func doorDevice(t testing.TB, f *apiFx, u apiUnit, eventID string, doors []map[string]any) (string, *apiClient) {
	id, c, _ := doorDeviceKey(t, f, u, eventID, doors)
	return id, c
}

// doorDeviceKey is doorDevice that also answers the key.
func doorDeviceKey(t testing.TB, f *apiFx, u apiUnit, eventID string, doors []map[string]any) (string, *apiClient, string) {
	t.Helper()
	body := map[string]any{"name": "Gate"}
	if doors != nil {
		body["doors"] = doors
	}
	d := apiWant(t, u.dev.Do("POST", "/v1/events/"+eventID+"/devices", body), 201)
	require.Equal(t, "pending", d["status"])
	code := apiS(d, "setupCode")
	require.Equal(t, f.s.URL+"/door?setup="+code, d["setupUrl"])
	init := apiWant(t, u.raw.Do("POST", "/door/v1/device/initialize", map[string]any{"setupCode": code, "deviceName": "North gate"}), 201)
	key := apiS(init, "key")
	require.True(t, strings.HasPrefix(key, "dk_"))
	require.Equal(t, d["id"], init["deviceId"])
	return apiS(d, "id"), u.raw.WithKey(key), key
}

func scanOf(id string, reg map[string]any, extra map[string]any) map[string]any {
	s := map[string]any{"scanId": id, "checkinCode": reg["checkinCode"], "subjectType": "event", "scannedAt": time.Now().UTC().Format(time.RFC3339)}
	return apiMerge(s, extra)
}

func scans(t testing.TB, c *apiClient, list ...map[string]any) []map[string]any {
	t.Helper()
	m := apiWant(t, c.Do("POST", "/door/v1/scans", map[string]any{"scans": list}), 200)
	raw, _ := m["results"].([]any)
	out := make([]map[string]any, len(raw))
	for i, r := range raw {
		out[i] = r.(map[string]any)
	}
	require.Len(t, out, len(list))
	return out
}

func checkinsOf(t testing.TB, x doorFx) []map[string]any {
	t.Helper()
	return apiData(t, apiWant(t, x.u.dev.Do("GET", "/v1/events/"+x.eventID+"/checkins", nil), 200))
}

func TestDoorDevices(t *testing.T) {
	f := newAPIFx(t)
	x := newDoorFx(t, f)

	t.Run("list and get never show the setup code or a key", func(t *testing.T) {
		l := apiWant(t, x.u.dev.Do("GET", "/v1/events/"+x.eventID+"/devices", nil), 200)
		devs := apiData(t, l)
		require.Len(t, devs, 1)
		d := devs[0]
		require.Equal(t, "active", d["status"])
		require.Equal(t, "North gate", d["name"])
		require.NotNil(t, d["lastSeenAt"])
		g := x.u.dev.Do("GET", "/v1/events/"+x.eventID+"/devices/"+x.devID, nil)
		require.NotContains(t, string(g.Body), "setupCode")
		require.NotContains(t, string(g.Body), "dk_")
		doors := d["doors"].([]any)
		require.Len(t, doors, 2, "every door of the event: its own and the venue's")
	})

	t.Run("a setup code works once; unknown codes are 401", func(t *testing.T) {
		d := apiWant(t, x.u.dev.Do("POST", "/v1/events/"+x.eventID+"/devices", map[string]any{"name": "Once"}), 201)
		code := apiS(d, "setupCode")
		apiWant(t, x.u.raw.Do("POST", "/door/v1/device/initialize", map[string]any{"setupCode": code}), 201)
		apiWantErr(t, x.u.raw.Do("POST", "/door/v1/device/initialize", map[string]any{"setupCode": code}), 401, "UNAUTHENTICATED")
		apiWantErr(t, x.u.raw.Do("POST", "/door/v1/device/initialize", map[string]any{"setupCode": "ds_nope"}), 401, "UNAUTHENTICATED")
		apiWant400(t, x.u.raw.AllowInvalidRequest().Do("POST", "/door/v1/device/initialize", map[string]any{}), "setupCode")
	})

	t.Run("the audit log never holds a setup code", func(t *testing.T) {
		d := apiWant(t, x.u.dev.Do("POST", "/v1/events/"+x.eventID+"/devices", map[string]any{"name": "Audited"}), 201)
		code := apiS(d, "setupCode")
		require.Eventually(t, func() bool {
			l := f.admin(t).Do("GET", "/admin/v1/business-units/"+x.u.ID+"/audit-log", nil)
			require.NotContains(t, string(l.Body), code)
			return strings.Contains(string(l.Body), apiS(d, "id"))
		}, 5*time.Second, 50*time.Millisecond, "the device's creation is in the audit log")
	})

	t.Run("bad doors and names are 400", func(t *testing.T) {
		apiWant400(t, x.u.dev.Do("POST", "/v1/events/"+x.eventID+"/devices", map[string]any{"name": "X", "doors": []any{map[string]any{"subjectType": "venue", "subjectId": "ven_404"}}}), "doors[0].subjectId")
		apiWant400(t, x.u.dev.AllowInvalidRequest().Do("POST", "/v1/events/"+x.eventID+"/devices", map[string]any{"name": ""}), "name")
		apiWant400(t, x.u.dev.AllowInvalidRequest().Do("POST", "/v1/events/"+x.eventID+"/devices", map[string]any{"name": "X", "doors": []any{map[string]any{"subjectType": "gate"}}}), "doors[0].subjectType")
	})

	t.Run("keys answer 401 on the wrong surface", func(t *testing.T) {
		devKey := x.dev
		apiWantErr(t, devKey.AllowInvalidRequest().Do("GET", "/v1/events/"+x.eventID, nil), 401, "UNAUTHENTICATED")
		apiWantErr(t, devKey.Do("GET", "/storefront/v1/events/"+x.eventID, nil), 401, "UNAUTHENTICATED")
		apiWantErr(t, x.u.dev.Do("GET", "/door/v1/event", nil), 401, "UNAUTHENTICATED")
		apiWantErr(t, x.u.sf.Do("GET", "/door/v1/event", nil), 401, "UNAUTHENTICATED")
		apiWantErr(t, x.u.raw.Do("GET", "/door/v1/passes", nil), 401, "UNAUTHENTICATED")
		ev := apiWant(t, devKey.Do("GET", "/door/v1/event", nil), 200)
		require.Equal(t, x.eventID, ev["id"])
		require.Equal(t, x.devID, apiM(ev, "device")["id"])
	})

	t.Run("other units and events see 404", func(t *testing.T) {
		other := f.unit(t)
		apiWantErr(t, other.dev.Do("GET", "/v1/events/"+x.eventID+"/devices/"+x.devID, nil), 404, "NOT_FOUND")
		apiWantErr(t, other.dev.Do("POST", "/v1/events/"+x.eventID+"/devices/"+x.devID+"/revoke", nil), 404, "NOT_FOUND")
		ev2 := apiPublished(t, x.u.dev)
		apiWantErr(t, x.u.dev.Do("GET", "/v1/events/"+ev2+"/devices/"+x.devID, nil), 404, "NOT_FOUND")
		apiWantErr(t, x.u.dev.Do("GET", "/v1/events/"+x.eventID+"/devices/dev_404", nil), 404, "NOT_FOUND")
		require.Empty(t, apiData(t, apiWant(t, x.u.dev.Do("GET", "/v1/events/"+ev2+"/devices", nil), 200)))
	})

	t.Run("revoked devices answer 401 from the next request", func(t *testing.T) {
		id, c := doorDevice(t, f, x.u, x.eventID, nil)
		apiWant(t, c.Do("GET", "/door/v1/event", nil), 200)
		d := apiWant(t, x.u.dev.Do("POST", "/v1/events/"+x.eventID+"/devices/"+id+"/revoke", nil), 200)
		require.Equal(t, "revoked", d["status"])
		apiWantErr(t, c.Do("GET", "/door/v1/event", nil), 401, "UNAUTHENTICATED")
		apiWantErr(t, c.Do("POST", "/door/v1/scans", map[string]any{"scans": []any{scanOf("r1", x.regs[0], nil)}}), 401, "UNAUTHENTICATED")
		for _, ch := range checkinsOf(t, x) {
			require.NotEqual(t, id, ch["deviceId"], "a revoked device recorded nothing")
		}
	})
}

func TestDoorScans(t *testing.T) {
	f := newAPIFx(t)

	t.Run("malformed batches record nothing", func(t *testing.T) {
		x := newDoorFx(t, f)
		good := scanOf("g1", x.regs[0], nil)
		many := make([]any, 501)
		for i := range many {
			many[i] = scanOf(fmt.Sprintf("m%d", i), x.regs[0], nil)
		}
		apiWant400(t, x.dev.AllowInvalidRequest().Do("POST", "/door/v1/scans", map[string]any{"scans": many}), "scans")
		apiWant400(t, x.dev.AllowInvalidRequest().Do("POST", "/door/v1/scans", map[string]any{"scans": []any{}}), "scans")
		apiWant400(t, x.dev.AllowInvalidRequest().Do("POST", "/door/v1/scans", map[string]any{"scans": []any{good, map[string]any{"scanId": "b", "subjectType": "event", "scannedAt": "yesterday"}}}), "scans[1].scannedAt")
		apiWant400(t, x.dev.Do("POST", "/door/v1/scans", map[string]any{"scans": []any{good, map[string]any{"scanId": "b", "subjectType": "event", "scannedAt": "2026-01-01T00:00:00Z"}}}), "scans[1].checkinCode")
		apiWant400(t, x.dev.Do("POST", "/door/v1/scans", map[string]any{"scans": []any{good, map[string]any{"scanId": "c", "subjectType": "venue", "checkinCode": "X", "scannedAt": "2026-01-01T00:00:00Z"}}}), "scans[1].subjectId")
		apiWantErr(t, x.dev.Do("POST", "/door/v1/scans", []byte(`{"scans":[`)), 400, "INVALID_ARGUMENT")
		require.Empty(t, checkinsOf(t, x), "nothing recorded")
	})

	t.Run("verdicts", func(t *testing.T) {
		x := newDoorFx(t, f)
		other := newDoorFx(t, f) // a pass of another event
		_, venueOnly := doorDevice(t, f, x.u, x.eventID, []map[string]any{{"subjectType": "venue", "subjectId": x.venueID}})
		res := scans(t, x.dev,
			scanOf("s1", x.regs[0], nil),
			scanOf("s2", x.regs[0], nil),
			scanOf("s3", x.regs[2], nil),
			scanOf("s4", other.regs[0], nil),
			map[string]any{"scanId": "s5", "registrationId": x.regs[1]["id"], "subjectType": "session", "subjectId": "ses_404", "scannedAt": "2026-01-01T00:00:00Z"},
		)
		require.Equal(t, "admitted", res[0]["verdict"])
		chk := apiM(res[0], "checkin")
		require.Equal(t, "scan", chk["method"])
		require.Equal(t, x.devID, chk["deviceId"])
		require.Equal(t, "already_checked_in", res[1]["verdict"])
		require.Equal(t, chk["id"], apiM(res[1], "firstCheckin")["id"])
		require.Equal(t, x.devID, apiM(res[1], "firstCheckin")["deviceId"])
		require.Equal(t, "refused", res[2]["verdict"])
		require.Equal(t, "REGISTRATION_NOT_CONFIRMED", res[2]["reason"])
		require.Equal(t, "NOT_FOUND", res[3]["reason"], "a pass of another event is not found")
		require.Equal(t, "DOOR_NOT_ALLOWED", res[4]["reason"])
		v := scans(t, venueOnly, scanOf("v1", x.regs[1], nil))
		require.Equal(t, "DOOR_NOT_ALLOWED", v[0]["reason"], "an event-door scan on a venue-only device")

		// The same record as the Developer API's: one per registration and door.
		cs := checkinsOf(t, x)
		require.Len(t, cs, 1)
		require.Equal(t, chk["id"], cs[0]["id"])
		require.Equal(t, x.devID, cs[0]["deviceId"])
		api := apiWant(t, x.u.dev.Do("POST", "/v1/events/"+x.eventID+"/checkins", map[string]any{"registrationId": x.regs[0]["id"], "subjectType": "event"}), 200)
		require.Equal(t, true, api["alreadyCheckedIn"])
		apiWant(t, x.u.dev.Do("POST", "/v1/events/"+x.eventID+"/checkins", map[string]any{"registrationId": x.regs[1]["id"], "subjectType": "event"}), 201)
		r := scans(t, x.dev, scanOf("s6", x.regs[1], nil))
		require.Equal(t, "already_checked_in", r[0]["verdict"])
		require.Nil(t, apiM(r[0], "firstCheckin")["deviceId"], "first checked in through the API")
	})

	t.Run("a Developer API check-in is seen by the next batch", func(t *testing.T) {
		x := newDoorFx(t, f)
		api := apiWant(t, x.u.dev.Do("POST", "/v1/events/"+x.eventID+"/checkins", map[string]any{"checkinCode": x.regs[1]["checkinCode"], "subjectType": "event"}), 201)
		apiChk := apiM(api, "checkin")
		// A plain batch (the decoder's fast shape), then the same scans
		// with an escaped scan id (the binder's path): the same verdicts.
		list := []map[string]any{scanOf("api1", x.regs[1], nil), scanOf("api2", x.regs[0], nil),
			scanOf("api3", x.regs[1], map[string]any{"offline": true, "admittedOffline": true})}
		r := scans(t, x.dev, list...)
		require.Equal(t, "already_checked_in", r[0]["verdict"])
		require.Equal(t, apiChk["id"], apiM(r[0], "firstCheckin")["id"])
		require.Nil(t, apiM(r[0], "firstCheckin")["deviceId"], "first checked in through the API")
		require.Equal(t, "admitted", r[1]["verdict"])
		require.Equal(t, "already_checked_in", r[2]["verdict"])
		conflicts := apiData(t, apiWant(t, x.u.dev.Do("GET", "/v1/events/"+x.eventID+"/door-conflicts", nil), 200))
		require.Len(t, conflicts, 1, "admitted offline on a pass the API used first")
		require.Equal(t, "ALREADY_CHECKED_IN", conflicts[0]["reason"])
		escaped := apiWant(t, x.dev.Do("POST", "/door/v1/scans", []byte(`{"scans":[{"scanId":"esc\u0031","checkinCode":"`+
			apiS(x.regs[1], "checkinCode")+`","subjectType":"event","scannedAt":"2026-01-01T00:00:00Z"}]}`)), 200)
		er := escaped["results"].([]any)[0].(map[string]any)
		require.Equal(t, "esc1", er["scanId"])
		require.Equal(t, "already_checked_in", er["verdict"])
		require.Equal(t, apiChk["id"], apiM(er, "firstCheckin")["id"])
		// And a door check-in is the Developer API's: its repeat there
		// answers it.
		again := apiWant(t, x.u.dev.Do("POST", "/v1/events/"+x.eventID+"/checkins", map[string]any{"registrationId": x.regs[0]["id"], "subjectType": "event"}), 200)
		require.Equal(t, true, again["alreadyCheckedIn"])
		require.Equal(t, apiM(r[1], "checkin")["id"], apiM(again, "checkin")["id"])
	})

	t.Run("a scan id answers its first result, durably per device", func(t *testing.T) {
		x := newDoorFx(t, f)
		first := scans(t, x.dev, scanOf("same", x.regs[0], nil), scanOf("nf", x.regs[0], map[string]any{"checkinCode": "CHK-NOPE"}))
		again := scans(t, x.dev, scanOf("same", x.regs[0], nil), scanOf("nf", x.regs[1], nil))
		require.Equal(t, first, again)
		require.Len(t, checkinsOf(t, x), 1)
		// Another device's scan id of the same name is its own.
		_, d2 := doorDevice(t, f, x.u, x.eventID, nil)
		r := scans(t, d2, scanOf("nf", x.regs[1], nil))
		require.Equal(t, "admitted", r[0]["verdict"])
	})

	t.Run("offline scannedAt", func(t *testing.T) {
		x := newDoorFx(t, f)
		hourAgo := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
		r := scans(t, x.dev,
			scanOf("o1", x.regs[0], map[string]any{"offline": true, "scannedAt": hourAgo.Format(time.RFC3339)}),
			scanOf("o2", x.regs[1], map[string]any{"offline": true, "scannedAt": "2020-01-01T00:00:00Z"}))
		require.Equal(t, hourAgo.Format(time.RFC3339), apiM(r[0], "checkin")["checkedInAt"])
		at, err := time.Parse(time.RFC3339, apiS(apiM(r[1], "checkin"), "checkedInAt"))
		require.NoError(t, err)
		require.WithinDuration(t, time.Now(), at, time.Minute, "beyond 7 days: server time")
	})

	t.Run("door conflicts", func(t *testing.T) {
		x := newDoorFx(t, f)
		_, d2 := doorDevice(t, f, x.u, x.eventID, nil)
		scans(t, x.dev, scanOf("a", x.regs[0], nil))
		r := scans(t, d2,
			scanOf("c1", x.regs[0], map[string]any{"offline": true, "admittedOffline": true}),
			scanOf("c2", x.regs[2], map[string]any{"offline": true, "admittedOffline": true}),
			scanOf("c3", x.regs[1], map[string]any{"offline": true, "admittedOffline": true}))
		require.Equal(t, []any{"already_checked_in", "refused", "admitted"}, []any{r[0]["verdict"], r[1]["verdict"], r[2]["verdict"]})
		l := apiData(t, apiWant(t, x.u.dev.Do("GET", "/v1/events/"+x.eventID+"/door-conflicts", nil), 200))
		require.Len(t, l, 2)
		require.Equal(t, "REGISTRATION_NOT_CONFIRMED", l[0]["reason"])
		require.Equal(t, "ALREADY_CHECKED_IN", l[1]["reason"])
		require.Equal(t, x.devID, apiM(l[1], "firstCheckin")["deviceId"])
		// A repeat is no second conflict.
		scans(t, d2, scanOf("c1", x.regs[0], map[string]any{"offline": true, "admittedOffline": true}))
		require.Len(t, apiData(t, apiWant(t, x.u.dev.Do("GET", "/v1/events/"+x.eventID+"/door-conflicts", nil), 200)), 2)
	})
}

func TestDoorPasses(t *testing.T) {
	f := newAPIFx(t)
	x := newDoorFx(t, f)

	all := func(cursor string, limit int) ([]map[string]any, string) {
		var out []map[string]any
		for {
			p := "/door/v1/passes?limit=" + fmt.Sprint(limit)
			if cursor != "" {
				p += "&cursor=" + cursor
			}
			m := apiWant(t, x.dev.Do("GET", p, nil), 200)
			out = append(out, apiData(t, m)...)
			cursor = apiS(m, "nextCursor")
			require.NotEmpty(t, cursor)
			if m["hasMore"] == false {
				return out, cursor
			}
		}
	}
	passes, cur := all("", 2)
	require.Len(t, passes, 3)
	require.Equal(t, "cancelled", passes[2]["status"])

	caught := apiWant(t, x.dev.Do("GET", "/door/v1/passes?cursor="+cur, nil), 200)
	require.Empty(t, apiData(t, caught))
	require.Equal(t, false, caught["hasMore"])
	require.Equal(t, cur, caught["nextCursor"])
	// The caught-up answer is written by hand (no actor, no copy of the
	// query): the same bytes json.Marshal writes for the page, with or
	// without a limit; a bad limit still answers 400.
	raw := x.dev.Do("GET", "/door/v1/passes?limit=7&cursor="+cur, nil)
	require.Equal(t, 200, raw.Status)
	want, _ := json.Marshal(map[string]any{"data": []any{}, "hasMore": false, "nextCursor": cur})
	require.JSONEq(t, string(want), string(raw.Body))
	require.Equal(t, `{"data":[],"hasMore":false,"nextCursor":"`+cur+`"}`, string(raw.Body))
	apiWant400(t, x.dev.AllowInvalidRequest().Do("GET", "/door/v1/passes?limit=0&cursor="+cur, nil), "limit")
	apiWant400(t, x.dev.AllowInvalidRequest().Do("GET", "/door/v1/passes?limit=x&cursor="+cur, nil), "limit")

	// A check-in through the API and a cancellation arrive; nothing else.
	apiWant(t, x.u.dev.Do("POST", "/v1/events/"+x.eventID+"/checkins", map[string]any{"registrationId": x.regs[0]["id"], "subjectType": "event"}), 201)
	apiWant(t, x.u.dev.Do("POST", "/v1/events/"+x.eventID+"/registrations/"+apiS(x.regs[1], "id")+"/cancel", nil), 200)
	delta, _ := all(cur, 1000)
	require.Len(t, delta, 2)
	require.Equal(t, x.regs[0]["id"], delta[0]["registrationId"])
	require.Len(t, delta[0]["checkins"], 1)
	require.Equal(t, "cancelled", delta[1]["status"])

	apiWant400(t, x.dev.Do("GET", "/door/v1/passes?cursor=garbage", nil), "cursor")
	apiWant400(t, x.dev.AllowInvalidRequest().Do("GET", "/door/v1/passes?limit=1001", nil), "limit")
	otherEvent := newDoorFx(t, f)
	_, otherCur := func() ([]map[string]any, string) {
		m := apiWant(t, otherEvent.dev.Do("GET", "/door/v1/passes", nil), 200)
		return nil, apiS(m, "nextCursor")
	}()
	apiWant400(t, x.dev.Do("GET", "/door/v1/passes?cursor="+otherCur, nil), "cursor")

	// gzip when asked.
	big := newDoorFx(t, f)
	tt := apiOpenType(t, big.u.dev, big.eventID, map[string]any{"capacity": 100})
	for i := range 30 {
		apiRegister(t, big.u.dev, big.eventID, tt, fmt.Sprintf("p%d@door.io", i))
	}
	req, _ := nethttp.NewRequest("GET", f.s.URL+"/door/v1/passes", nil)
	req.Header.Set("Authorization", "Bearer "+big.key)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := (&nethttp.Transport{DisableCompression: true}).RoundTrip(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "gzip", resp.Header.Get("Content-Encoding"))
	zr, err := gzip.NewReader(resp.Body)
	require.NoError(t, err)
	var page struct {
		Data []map[string]any `json:"data"`
	}
	require.NoError(t, json.NewDecoder(zr).Decode(&page))
	require.Len(t, page.Data, 33)
}

func TestDoorRateLimit(t *testing.T) {
	f := newAPIFx(t, func(c *app.Config) { c.DevicePerMinute = 6 }) // a bucket of 3: half a minute's
	x := newDoorFx(t, f)
	for range 2 { // initialize counted nothing; newDoorFx made no door call
		apiWant(t, x.dev.Do("GET", "/door/v1/event", nil), 200)
	}
	apiWant(t, x.dev.Do("POST", "/door/v1/scans", map[string]any{"scans": []any{scanOf("a", x.regs[0], nil), scanOf("b", x.regs[1], nil)}}), 200)
	apiWantErr(t, x.dev.Do("GET", "/door/v1/event", nil), 429, "RESOURCE_EXHAUSTED")
	_, other := doorDevice(t, f, x.u, x.eventID, nil)
	apiWant(t, other.Do("GET", "/door/v1/event", nil), 200)
}

// sseReader reads a door stream's events.
type sseReader struct {
	resp *nethttp.Response
	r    *bufio.Reader
}

func openStream(t testing.TB, base, key, lastID string) *sseReader {
	t.Helper()
	req, _ := nethttp.NewRequest("GET", base+"/door/v1/stream", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := nethttp.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	t.Cleanup(func() { resp.Body.Close() })
	return &sseReader{resp: resp, r: bufio.NewReader(resp.Body)}
}

// next returns the next event's id (if any) and data, within wait.
func (s *sseReader) next(t testing.TB, wait time.Duration) (id string, data map[string]any) {
	t.Helper()
	type ev struct {
		id   string
		data map[string]any
		err  error
	}
	ch := make(chan ev, 1)
	go func() {
		var e ev
		for {
			line, err := s.r.ReadString('\n')
			if err != nil {
				e.err = err
				ch <- e
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case strings.HasPrefix(line, "id: "):
				e.id = line[4:]
			case strings.HasPrefix(line, "data: "):
				e.err = json.Unmarshal([]byte(line[6:]), &e.data)
			case line == "" && e.data != nil:
				ch <- e
				return
			}
		}
	}()
	select {
	case e := <-ch:
		require.NoError(t, e.err)
		return e.id, e.data
	case <-time.After(wait):
		s.resp.Body.Close()
		t.Fatalf("no stream event within %s", wait)
	}
	return "", nil
}

func TestDoorStream(t *testing.T) {
	f := newAPIFx(t)
	x := newDoorFx(t, f)
	_, _, otherKey := doorDeviceKey(t, f, x.u, x.eventID, nil)
	s := openStream(t, f.s.URL, otherKey, "")
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	scans(t, x.dev, scanOf("live", x.regs[0], nil))
	id, pass := s.next(t, 10*time.Second)
	took := time.Since(start)
	t.Logf("a check-in on one device reached another's stream in %s", took)
	require.Equal(t, x.regs[0]["id"], pass["registrationId"])
	require.Len(t, pass["checkins"], 1)
	require.NotEmpty(t, id)

	// Last-Event-ID resumes after what was seen: the next change only.
	apiWant(t, x.u.dev.Do("POST", "/v1/events/"+x.eventID+"/registrations/"+apiS(x.regs[1], "id")+"/cancel", nil), 200)
	s2 := openStream(t, f.s.URL, otherKey, id)
	_, p2 := s2.next(t, 10*time.Second)
	require.Equal(t, x.regs[1]["id"], p2["registrationId"])
	require.Equal(t, "cancelled", p2["status"])

	// A garbage Last-Event-ID is a plain 400.
	req, _ := nethttp.NewRequest("GET", f.s.URL+"/door/v1/stream", nil)
	req.Header.Set("Authorization", "Bearer "+otherKey)
	req.Header.Set("Last-Event-ID", "garbage")
	resp, err := nethttp.DefaultClient.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, 400, resp.StatusCode, string(b))
}
