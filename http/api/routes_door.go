package api

import (
	"bufio"
	"bytes"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/klauspost/compress/gzip"

	"ticketd/directory"
	"ticketd/event"
	thttp "ticketd/http"
	"ticketd/internal/jsonenc"
	"ticketd/ops"
)

// The door kit's routes (decisions §18): devices under the Developer API
// (secret keys), and /door/v1 for the devices themselves (device keys).

// CreateDeviceBody creates a door device.
type CreateDeviceBody struct {
	Name  string          `json:"name" v:"required,minLen=1,maxLen=100" doc:"What staff call the device (\"North gate phone\")"`
	Doors []event.DoorRef `json:"doors" v:"maxItems=100" doc:"The doors it may admit at; omitted or empty: every door of the event"`
}

// DeviceView is a device as the Developer API answers it: never its setup
// code or key.
type DeviceView struct {
	ID             string          `json:"id"`
	Name           string          `json:"name"`
	EventID        string          `json:"eventId"`
	Doors          []event.DoorRef `json:"doors" doc:"The doors it admits at"`
	Status         string          `json:"status" v:"enum=pending|active|revoked" doc:"pending until its setup code is used, then active, or revoked"`
	SetupExpiresAt event.Time      `json:"setupExpiresAt" doc:"Until when the setup code works (15 minutes from creation)"`
	CreatedAt      event.Time      `json:"createdAt"`
	ActivatedAt    *event.Time     `json:"activatedAt" doc:"When the setup code was used"`
	RevokedAt      *event.Time     `json:"revokedAt" doc:"When it was revoked; null while it works"`
	LastSeenAt     *event.Time     `json:"lastSeenAt" doc:"The device's last request (as seen by the node that answers)"`
}

// CreatedDevice answers device creation: the one time the setup code is
// shown.
type CreatedDevice struct {
	DeviceView
	SetupCode string `json:"setupCode" doc:"One-time code for POST /door/v1/device/initialize; shown only now"`
	SetupURL  string `json:"setupUrl" doc:"{base_url}/door?setup=<setupCode>: open it on the device (the console shows it as a QR code)"`
}

// InitializeDeviceBody uses a setup code.
type InitializeDeviceBody struct {
	SetupCode  string `json:"setupCode" v:"required,minLen=1,maxLen=100"`
	DeviceName string `json:"deviceName,omitempty" v:"maxLen=100" doc:"Renames the device"`
}

// InitializedDevice answers initialize: the one time the key is shown.
type InitializedDevice struct {
	DeviceID string          `json:"deviceId"`
	Key      string          `json:"key" doc:"The device key dk_...: Authorization: Bearer <key> on /door/v1; shown only now"`
	EventID  string          `json:"eventId"`
	Name     string          `json:"name"`
	Doors    []event.DoorRef `json:"doors"`
}

// DoorDevice names a device of the event, so a scanner can say where a
// pass was used.
type DoorDevice struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// DoorEventView answers GET /door/v1/event.
type DoorEventView struct {
	event.DoorEvent
	Device  DoorDevice   `json:"device" doc:"This device"`
	Devices []DoorDevice `json:"devices" doc:"Every device of the event, to name where a pass was used"`
}

// passesQuery documents GET /door/v1/passes (the handler reads it by
// hand: its limit defaults to 1000, not the list default).
type passesQuery struct {
	Cursor string `query:"cursor" v:"maxLen=200" doc:"nextCursor of an earlier page; absent: every pass from the start"`
	Limit  int    `query:"limit" v:"min=1,max=1000" doc:"Page size, 1 to 1000; default 1000"`
}

// streamQuery documents GET /door/v1/stream.
type streamQuery struct {
	Cursor string `query:"cursor" v:"maxLen=200" doc:"Start after this passes cursor (the Last-Event-ID header wins); absent: from now"`
}

// Stream bounds: a poll of the event on a node that does not own it (the
// owner's pulse is local), a heartbeat comment, and the longest session
// before the client reconnects (EventSource does, with Last-Event-ID).
const (
	streamPoll      = 300 * time.Millisecond
	streamHeartbeat = 15 * time.Second
	streamMax       = 10 * time.Minute
	streamWriteWait = 30 * time.Second
	// streamRetry is the reconnect delay the stream asks of EventSource.
	streamRetry = 1000
)

func (a *api) doorRoutes() []thttp.Route {
	dev := func(r thttp.Route) thttp.Route { r.Surface = thttp.Developer; return r }
	door := func(r thttp.Route) thttp.Route {
		r.Surface = thttp.Door
		next := r.Handle
		if !r.NoKey {
			r.Handle = func(c *thttp.Ctx) (any, error) {
				a.noteSeen(c)
				return next(c)
			}
		}
		return r
	}
	return []thttp.Route{
		dev(thttp.Route{Method: "POST", Path: "/v1/events/{eventId}/devices", OperationID: "createDevice", Tag: "Door devices",
			Summary: "Create a door device: answers its one-time setupCode and setupUrl (valid 15 minutes)",
			Body:    CreateDeviceBody{}, Success: 201, Response: CreatedDevice{}, Errors: []int{400, 404},
			Handle: a.createDevice}),
		dev(thttp.Route{Method: "GET", Path: "/v1/events/{eventId}/devices", OperationID: "listDevices", Tag: "Door devices",
			Summary: "List the event's door devices, oldest first", Success: 200, Response: event.List[DeviceView]{},
			Errors: []int{404}, Handle: a.listDevices}),
		dev(thttp.Route{Method: "GET", Path: "/v1/events/{eventId}/devices/{deviceId}", OperationID: "getDevice", Tag: "Door devices",
			Summary: "Get a door device", Success: 200, Response: DeviceView{}, Errors: []int{404}, Handle: a.getDevice}),
		dev(thttp.Route{Method: "POST", Path: "/v1/events/{eventId}/devices/{deviceId}/revoke", OperationID: "revokeDevice", Tag: "Door devices",
			Summary: "Revoke a door device: its key answers 401 from the next request", Success: 200, Response: DeviceView{},
			Errors: []int{404}, Handle: a.revokeDevice}),
		dev(thttp.Route{Method: "GET", Path: "/v1/events/{eventId}/door-conflicts", OperationID: "listDoorConflicts", Tag: "Door devices",
			Summary: "List door conflicts, newest first: scans a device admitted offline that were refused or used already",
			Query:   event.ListDoorConflicts{}, Success: 200, Response: event.List[event.DoorConflict]{}, Errors: []int{400, 404},
			Handle: eventCmd[event.ListDoorConflicts](a, nil)}),

		door(thttp.Route{Method: "POST", Path: "/door/v1/device/initialize", OperationID: "initializeDevice", Tag: "Device",
			Summary: "Use a setup code (once, within 15 minutes): answers the device key", NoKey: true,
			Body: InitializeDeviceBody{}, Success: 201, Response: InitializedDevice{}, Errors: []int{400, 401},
			Handle: a.initializeDevice}),
		door(thttp.Route{Method: "GET", Path: "/door/v1/event", OperationID: "getDoorEvent", Tag: "Event",
			Summary: "The device's event, its doors with names and counts, the ticket types' names and the event's devices",
			Success: 200, Response: DoorEventView{}, Handle: a.doorEvent}),
		door(thttp.Route{Method: "GET", Path: "/door/v1/passes", OperationID: "listPasses", Hot: true, Tag: "Passes",
			Summary: "Page through the passes by change: without cursor every pass; with the last page's nextCursor, the passes changed since",
			Query:   passesQuery{}, Success: 200, Response: event.PassPage{}, Errors: []int{400}, Handle: a.listPasses}),
		door(thttp.Route{Method: "POST", Path: "/door/v1/scans", OperationID: "recordScans", Tag: "Scans",
			Summary: "Record 1 to 500 scans: a verdict per scan, in order; a repeated scanId answers its first result",
			Body:    event.RecordScans{}, Success: 200, Response: event.ScanResults{}, Errors: []int{400},
			Handle: a.recordScans}),
		door(thttp.Route{Method: "GET", Path: "/door/v1/stream", OperationID: "streamPasses", Tag: "Passes",
			Summary: "Server-Sent Events: each data line is a pass as it changes; the id is a passes cursor (Last-Event-ID resumes)",
			Query:   streamQuery{}, Success: 200, Response: event.DoorPass{}, ContentType: "text/event-stream", Errors: []int{400},
			Handle: a.streamPasses}),
	}
}

func (a *api) deviceView(d directory.Device) DeviceView {
	v := DeviceView{ID: d.ID, Name: d.Name, EventID: d.EventID, Doors: doorRefs(d.Doors), Status: d.Status(),
		SetupExpiresAt: event.At(d.SetupExpiresAt), CreatedAt: event.At(d.CreatedAt)}
	if d.ActivatedAt != nil {
		t := event.At(*d.ActivatedAt)
		v.ActivatedAt = &t
	}
	if d.RevokedAt != nil {
		t := event.At(*d.RevokedAt)
		v.RevokedAt = &t
	}
	if at, ok := a.ops.DeviceSeen(d.ID); ok {
		t := event.At(at)
		v.LastSeenAt = &t
	}
	return v
}

func doorRefs(ds []directory.Door) []event.DoorRef {
	out := make([]event.DoorRef, len(ds))
	for i, d := range ds {
		out[i] = event.DoorRef{SubjectType: d.SubjectType, SubjectID: d.SubjectID}
	}
	return out
}

var errDeviceNotFound = &event.Error{Code: event.NotFound, Message: "device not found"}

// deviceOf returns the path's device if it belongs to the path's event of
// the caller's unit; any other is the same 404 as a missing one.
func (a *api) deviceOf(c *thttp.Ctx) (directory.Device, error) {
	eventID, err := a.eventOf(c)
	if err != nil {
		return directory.Device{}, err
	}
	id := c.Param("deviceId")
	d, ok := a.ops.Directory().Device(id)
	if !ok && a.ops.DirectoryShared() {
		if err := a.ops.SyncDirectory(ops.SyncWait); err != nil {
			return directory.Device{}, errDirectoryUnread
		}
		d, ok = a.ops.Directory().Device(id)
	}
	if !ok || d.EventID != eventID || d.UnitID != c.Principal().UnitID {
		return directory.Device{}, errDeviceNotFound
	}
	return d, nil
}

func (a *api) createDevice(c *thttp.Ctx) (any, error) {
	eventID, err := a.eventOf(c)
	if err != nil {
		return nil, err
	}
	var body CreateDeviceBody
	if err := c.Bind(&body); err != nil {
		return nil, err
	}
	if strings.TrimSpace(body.Name) == "" {
		return nil, event.FieldError("name", "must not be empty")
	}
	doors, err := askOp(a, eventID, event.CheckDoors{Doors: body.Doors})
	if err != nil {
		return nil, err
	}
	spec := ops.DeviceSpec{UnitID: c.Principal().UnitID, EventID: eventID, Name: strings.TrimSpace(body.Name)}
	for _, d := range doors.Doors {
		spec.Doors = append(spec.Doors, directory.Door{SubjectType: d.SubjectType, SubjectID: d.SubjectID})
	}
	// The device commits the request's Idempotency-Key record with it (the
	// answer made of the device and its setup code), so a retry whose
	// answer was lost replays it instead of making a second device.
	base := c.BaseURL()
	created := func(d directory.Device, code string) CreatedDevice {
		return CreatedDevice{DeviceView: a.deviceView(d), SetupCode: code, SetupURL: base + "/door?setup=" + code}
	}
	d, code, err := a.ops.CreateDevice(keyed(c, func(r any) any {
		cd, _ := r.(ops.CreatedDevice)
		return created(cd.Device, cd.SetupCode)
	}), spec)
	if err != nil {
		return nil, keyedErr(c, deviceErr(err))
	}
	return created(d, code), nil
}

// deviceErr maps the directory's refusals to the API's errors.
func deviceErr(err error) error {
	var fe *directory.FieldError
	switch {
	case errors.As(err, &fe):
		return event.FieldError(fe.Field, fe.Reason)
	case errors.Is(err, directory.ErrNotFound):
		return errDeviceNotFound
	}
	return ops.MapErr(err)
}

func (a *api) listDevices(c *thttp.Ctx) (any, error) {
	eventID, err := a.eventOf(c)
	if err != nil {
		return nil, err
	}
	if a.ops.DirectoryShared() {
		if err := a.ops.SyncDirectory(ops.SyncWait); err != nil {
			return nil, errDirectoryUnread
		}
	}
	out := event.List[DeviceView]{Data: []DeviceView{}}
	for _, d := range a.ops.Directory().Devices(eventID) {
		if d.UnitID == c.Principal().UnitID {
			out.Data = append(out.Data, a.deviceView(d))
		}
	}
	return out, nil
}

func (a *api) getDevice(c *thttp.Ctx) (any, error) {
	d, err := a.deviceOf(c)
	if err != nil {
		return nil, err
	}
	return a.deviceView(d), nil
}

func (a *api) revokeDevice(c *thttp.Ctx) (any, error) {
	d, err := a.deviceOf(c)
	if err != nil {
		return nil, err
	}
	d, err = a.ops.RevokeDevice(keyed(c, func(r any) any { d, _ := r.(directory.Device); return a.deviceView(d) }), d.ID)
	if err != nil {
		return nil, keyedErr(c, deviceErr(err))
	}
	return a.deviceView(d), nil
}

// errSetupInvalid is the one answer for an unknown, used or expired setup
// code (decisions §18: 401).
var errSetupInvalid = thttp.NewError(401, "invalid, used or expired setup code").WithReason(event.ReasonUnauthenticated)

func (a *api) initializeDevice(c *thttp.Ctx) (any, error) {
	var body InitializeDeviceBody
	if err := c.Bind(&body); err != nil {
		return nil, err
	}
	d, key, err := a.ops.InitializeDevice(contextBG, strings.TrimSpace(body.SetupCode), body.DeviceName)
	if errors.Is(err, directory.ErrSetupInvalid) {
		return nil, errSetupInvalid
	}
	if err != nil {
		return nil, ops.MapErr(err)
	}
	a.ops.NoteDeviceSeen(d.ID, c.Now())
	return InitializedDevice{DeviceID: d.ID, Key: key, EventID: d.EventID, Name: d.Name, Doors: doorRefs(d.Doors)}, nil
}

// noteSeen records the calling device's request: into its last-seen cell,
// found when its key was (deviceLocal), so at most once a
// doorwatch.SeenGrain; exactly, by id, for a Principal without one.
func (a *api) noteSeen(c *thttp.Ctx) {
	p := c.Principal()
	if dl, ok := p.Local.(*deviceLocal); ok {
		dl.seen.Note(c.Now())
		return
	}
	a.ops.NoteDeviceSeen(p.KeyID, c.Now())
}

// device returns the calling device's record.
func (a *api) device(c *thttp.Ctx) (directory.Device, error) {
	d, ok := a.ops.Directory().Device(c.Principal().KeyID)
	if !ok {
		// Authenticated from this very view a moment ago: only a newer
		// view can lack it, which never happens (devices are not removed).
		return d, thttp.NewError(503, "temporarily unavailable; retry")
	}
	return d, nil
}

func (a *api) doorEvent(c *thttp.Ctx) (any, error) {
	d, err := a.device(c)
	if err != nil {
		return nil, err
	}
	ev, err := askOp(a, d.EventID, event.GetDoorEvent{Doors: doorRefs(d.Doors)})
	if err != nil {
		return nil, err
	}
	out := DoorEventView{DoorEvent: ev, Device: DoorDevice{ID: d.ID, Name: d.Name}, Devices: []DoorDevice{}}
	for _, o := range a.ops.Directory().Devices(d.EventID) {
		out.Devices = append(out.Devices, DoorDevice{ID: o.ID, Name: o.Name})
	}
	return out, nil
}

// passesArgs reads GET /door/v1/passes' query: limit 1 to 1000 (default
// 1000), cursor at most 200 characters.
func passesArgs(c *thttp.Ctx) (event.ListPasses, error) {
	q := c.RequestCtx().QueryArgs()
	cmd := event.ListPasses{Limit: event.PassPageMax}
	if v := q.Peek("limit"); v != nil {
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 1 || n > event.PassPageMax {
			return cmd, event.FieldError("limit", "must be an integer from 1 to 1000")
		}
		cmd.Limit = n
	}
	if v := q.Peek("cursor"); v != nil {
		if len(v) > 200 {
			return cmd, event.FieldError("cursor", "not a passes cursor of this event")
		}
		cmd.Cursor = string(v)
	}
	return cmd, nil
}

// gzipMin is the smallest answer worth compressing.
const gzipMin = 1024

var gzipPool = sync.Pool{New: func() any { w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed); return w }}

// passJSONPool holds the buffers a page of passes is written into before
// it is compressed (~280 KB for a page of 1,000).
var passJSONPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// caughtUp is the empty last page of a caught-up device: the PassPage
// {data: [], hasMore: false, nextCursor: <its cursor>} written by hand
// from the query's bytes (valid until the answer is written).
type caughtUp struct{ cursor []byte }

// AppendJSON writes the page as encoding/json writes an event.PassPage.
func (p *caughtUp) AppendJSON(b []byte) []byte {
	b = append(b, `{"data":[],"hasMore":false,"nextCursor":`...)
	if bytes.ContainsAny(p.cursor, "\r\n") {
		// base64 skips line breaks: such a cursor parses, and is
		// escaped as it came.
		b = jsonenc.AppendString(b, string(p.cursor))
	} else {
		// Else it is base64url, nothing to escape.
		b = append(append(append(b, '"'), p.cursor...), '"')
	}
	return append(b, '}')
}

// caughtCursor is an event's pass stamp and its cursor as the service
// writes it (event.PassCursor): a device that sends it back while the
// stamp is the event's newest is caught up, found by comparing bytes,
// and answered with this page (its pointer is the answer: nothing is
// allocated).
type caughtCursor struct {
	ver    int64
	cursor string
	// stamp is the event's newest pass stamp as this node knows it
	// (ops.PassVerCell), compared with ver without a lookup.
	stamp *atomic.Int64
}

// AppendJSON writes the page as encoding/json writes an event.PassPage
// (the cursor is base64url: nothing to escape).
func (p *caughtCursor) AppendJSON(b []byte) []byte {
	b = append(b, `{"data":[],"hasMore":false,"nextCursor":"`...)
	b = append(b, p.cursor...)
	return append(b, `"}`...)
}

// caughtUpPage answers a device whose cursor is the event's newest pass
// stamp without the actor and without copying the query (the most
// frequent request of a door device that polls: issue 33 wants it at
// 0.8x the bare server's rate); nil when the request is anything else.
// The device's last such cursor is kept (deviceLocal.caught): while the
// stamp has not moved, its next poll costs a comparison, not a decode.
func (a *api) caughtUpPage(c *thttp.Ctx) thttp.JSONAppender {
	rc := c.RequestCtx()
	cur, limit, raw := rawPassesArgs(rc.URI().QueryString())
	if !raw {
		// Escaped: as the parsed query says.
		q := rc.QueryArgs()
		cur, limit = q.Peek("cursor"), q.Peek("limit")
	}
	if limit != nil {
		n := 0
		for _, d := range limit {
			if d < '0' || d > '9' || n > event.PassPageMax {
				return nil
			}
			n = n*10 + int(d-'0')
		}
		if n < 1 || n > event.PassPageMax {
			return nil
		}
	}
	if len(cur) == 0 || len(cur) > 200 {
		return nil
	}
	p := c.Principal()
	dl, _ := p.Local.(*deviceLocal)
	if dl != nil {
		if m := dl.caught.Load(); m != nil && string(cur) == m.cursor && m.stamp.Load() == m.ver {
			return m
		}
	}
	v, ok := event.ParsePassCursorBytes(p.EventID, cur)
	if !ok || !a.ops.PassVerCaughtUp(p.EventID, v) {
		return nil
	}
	if dl != nil {
		if s, stamp := event.PassCursor(p.EventID, v), a.ops.PassVerCell(p.EventID); s == string(cur) && stamp != nil {
			m := &caughtCursor{ver: v, cursor: s, stamp: stamp}
			dl.caught.Store(m)
			return m
		}
	}
	return &caughtUp{cursor: cur}
}

// rawPassesArgs finds the cursor and limit of a raw query string as
// fasthttp's parsed query would (the first of each; nil when absent),
// without parsing it: raw is false when the query holds an escape ('%'
// or '+'), which only the parse decodes.
func rawPassesArgs(q []byte) (cursor, limit []byte, raw bool) {
	if bytes.IndexByte(q, '%') >= 0 || bytes.IndexByte(q, '+') >= 0 {
		return nil, nil, false
	}
	for len(q) > 0 {
		pair := q
		if i := bytes.IndexByte(q, '&'); i >= 0 {
			pair, q = q[:i], q[i+1:]
		} else {
			q = nil
		}
		key, val := pair, pair[len(pair):]
		if i := bytes.IndexByte(pair, '='); i >= 0 {
			key, val = pair[:i], pair[i+1:]
		}
		switch {
		case cursor == nil && string(key) == "cursor":
			cursor = val
		case limit == nil && string(key) == "limit":
			limit = val
		}
	}
	return cursor, limit, true
}

func (a *api) listPasses(c *thttp.Ctx) (any, error) {
	if p := a.caughtUpPage(c); p != nil {
		return p, nil
	}
	cmd, err := passesArgs(c)
	if err != nil {
		return nil, err
	}
	eventID := c.Principal().EventID
	page, err := askOp(a, eventID, cmd)
	if err != nil {
		return nil, err
	}
	if !page.HasMore {
		if v, ok := event.ParsePassCursor(eventID, page.NextCursor); ok {
			a.ops.NotePassVer(eventID, v)
		}
	}
	rc := c.RequestCtx()
	if !bytes.Contains(rc.Request.Header.Peek("Accept-Encoding"), []byte("gzip")) {
		return page, nil
	}
	// The page's JSON goes through a pooled buffer into the gzip writer:
	// only the compressed body (about a tenth) is allocated per page.
	rawp := passJSONPool.Get().(*[]byte)
	defer passJSONPool.Put(rawp)
	raw := thttp.AppendPassPageJSON((*rawp)[:0], &page)
	*rawp = raw
	if len(raw) < gzipMin {
		return page, nil
	}
	var buf bytes.Buffer
	buf.Grow(len(raw) / 4)
	zw := gzipPool.Get().(*gzip.Writer)
	zw.Reset(&buf)
	_, _ = zw.Write(raw)
	_ = zw.Close()
	gzipPool.Put(zw)
	rc.Response.Header.Set("Content-Encoding", "gzip")
	rc.Response.Header.Set("Vary", "Accept-Encoding")
	c.SetEncodedBody(buf.Bytes())
	return page, nil
}

func (a *api) recordScans(c *thttp.Ctx) (any, error) {
	d, err := a.device(c)
	if err != nil {
		return nil, err
	}
	cmd, fast := fastScans(c.RequestCtx().PostBody())
	if !fast {
		if err := c.Bind(&cmd); err != nil {
			return nil, err
		}
	}
	cmd.DeviceID, cmd.Doors = d.ID, doorRefs(d.Doors)
	res, err := askOp(a, d.EventID, cmd)
	if fast && err == nil {
		releaseScans(cmd.Scans)
	}
	return res, err
}

// streamPasses answers Server-Sent Events: every pass as it changes after
// the cursor (Last-Event-ID, else ?cursor=, else now). Each batch of
// passes read together ends with an id line holding the cursor after
// them, so a reconnect resumes there (a pass may repeat, none is
// skipped). The first read happens before the stream starts, so a bad
// cursor is a plain 400.
func (a *api) streamPasses(c *thttp.Ctx) (any, error) {
	d, err := a.device(c)
	if err != nil {
		return nil, err
	}
	rc := c.RequestCtx()
	cursor := string(rc.Request.Header.Peek("Last-Event-ID"))
	if cursor == "" {
		cursor = string(rc.QueryArgs().Peek("cursor"))
	}
	if len(cursor) > 200 {
		return nil, event.FieldError("cursor", "not a passes cursor of this event")
	}
	eventID, deviceID := d.EventID, d.ID
	if cursor == "" {
		ev, err := askOp(a, eventID, event.GetDoorEvent{})
		if err != nil {
			return nil, err
		}
		cursor = ev.PassCursor
	}
	// Wait on the pulse from before the first read: a change in between
	// wakes the loop.
	changed := a.ops.Changed(eventID)
	first, err := askOp(a, eventID, event.ListPasses{Cursor: cursor, Limit: event.PassPageMax})
	if err != nil {
		return nil, err
	}
	closing := a.srv.Closing()
	conn := rc.Conn()
	started := time.Now()
	rc.SetContentType("text/event-stream")
	rc.Response.Header.Set("X-Accel-Buffering", "no")
	rc.SetStatusCode(200)
	rc.SetBodyStreamWriter(func(w *bufio.Writer) {
		deadline := func() { _ = conn.SetWriteDeadline(time.Now().Add(streamWriteWait)) }
		deadline()
		if _, err := w.WriteString("retry: " + strconv.Itoa(streamRetry) + "\n\n"); err != nil || w.Flush() != nil {
			return
		}
		page := first
		beat := time.NewTimer(streamHeartbeat)
		defer beat.Stop()
		for {
			if len(page.Data) > 0 {
				deadline()
				for i := range page.Data {
					b, err := gojson.Marshal(&page.Data[i])
					if err != nil {
						return
					}
					if i == len(page.Data)-1 {
						w.WriteString("id: " + page.NextCursor + "\n")
					}
					w.WriteString("data: ")
					w.Write(b)
					if _, err := w.WriteString("\n\n"); err != nil {
						return
					}
				}
				if w.Flush() != nil {
					return
				}
			}
			cursor = page.NextCursor
			if page.HasMore {
				changed = a.ops.Changed(eventID)
			} else {
				select {
				case <-changed:
				case <-time.After(streamPoll):
				case <-beat.C:
					deadline()
					if _, err := w.WriteString(": keep-alive\n\n"); err != nil || w.Flush() != nil {
						return
					}
					beat.Reset(streamHeartbeat)
				case <-closing:
					return
				}
				changed = a.ops.Changed(eventID)
			}
			if time.Since(started) > streamMax {
				return
			}
			if _, ok := a.ops.Directory().LookupDeviceID(deviceID); !ok {
				return // revoked: the stream ends with the key
			}
			// Asked aside, so that a shutdown is not held up by an ask
			// that waits for an owner (in a cluster's teardown, the
			// owner may be gone first).
			next, nerr, asked := first, error(nil), make(chan struct{})
			go func() {
				next, nerr = askOp(a, eventID, event.ListPasses{Cursor: cursor, Limit: event.PassPageMax})
				close(asked)
			}()
			select {
			case <-asked:
			case <-closing:
				return
			}
			if page, err = next, nerr; err != nil {
				return
			}
		}
	})
	return nil, nil
}
