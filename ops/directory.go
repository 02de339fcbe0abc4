package ops

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"ticketd/actors"
	"ticketd/actors/doorwatch"
	"ticketd/directory"
	"ticketd/event"
	"ticketd/webhooks"
)

// The directory's operations (business units, API keys, door devices)
// and the event index reads the doors need. Writes come back with the
// shell's failures mapped (MapErr); the directory's own refusals
// (directory.ErrNotFound, *directory.FieldError, directory.ErrSetupInvalid)
// pass unchanged.

// KeySpec says the key CreateKey makes.
type KeySpec = actors.NewKeySpec

// CreatedKey is the result CreateKey's write records: the key and its
// whole secret, shown once.
type CreatedKey = actors.CreatedKey

// CreatedDevice is the result CreateDevice's write records: the device
// and its one-time setup code.
type CreatedDevice = actors.CreatedDevice

// DeviceSpec says the door device CreateDevice makes.
type DeviceSpec = actors.DeviceSpec

// Directory is this node's current view of the directory (read-only).
func (o *Ops) Directory() *directory.State { return o.sys.Directory() }

// DirectoryShared reports cluster mode: the directory is a log other
// nodes write too, so a view may miss what was made a moment ago.
func (o *Ops) DirectoryShared() bool { return o.sys.DirectoryShared() }

// DirectoryStale reports a view too old to show a revocation (cluster
// mode).
func (o *Ops) DirectoryStale() bool { return o.sys.DirectoryStale() }

// Directory sync bounds: SyncDirectory waits at most SyncWait for the
// directory's log to be read; a failed read is tried again after
// syncPause, doubled up to syncPauseMax.
const (
	SyncWait     = 5 * time.Second
	syncPause    = 50 * time.Millisecond
	syncPauseMax = 500 * time.Millisecond
)

// SyncDirectory reads what other nodes added to the directory (cluster
// mode), trying again while a read fails (an election of the log's leader
// answers "temporarily unavailable" for a moment) until wait has passed;
// then it answers the last failure.
func (o *Ops) SyncDirectory(wait time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	pause := syncPause
	for {
		err := o.sys.SyncDirectory(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ops: directory not read within %s: %w", wait, err)
		case <-time.After(pause):
			pause = min(2*pause, syncPauseMax)
		}
	}
}

// CreateUnit makes a business unit.
func (o *Ops) CreateUnit(ctx context.Context, name string) (directory.Unit, error) {
	u, err := o.sys.CreateUnit(ctx, name)
	return u, MapErr(err)
}

// CreateKey makes an API key and answers it with its whole secret.
func (o *Ops) CreateKey(ctx context.Context, spec KeySpec) (directory.Key, string, error) {
	k, secret, err := o.sys.CreateKey(ctx, spec)
	return k, secret, MapErr(err)
}

// RevokeKey revokes an API key, effective at once.
func (o *Ops) RevokeKey(ctx context.Context, keyID string) (directory.Key, error) {
	k, err := o.sys.RevokeKey(ctx, keyID)
	return k, MapErr(err)
}

// CreateDevice makes a door device and answers its one-time setup code.
func (o *Ops) CreateDevice(ctx context.Context, spec DeviceSpec) (directory.Device, string, error) {
	d, code, err := o.sys.CreateDevice(ctx, spec)
	return d, code, MapErr(err)
}

// InitializeDevice trades a setup code for the device's key.
func (o *Ops) InitializeDevice(ctx context.Context, setupCode, name string) (directory.Device, string, error) {
	d, key, err := o.sys.InitializeDevice(ctx, setupCode, name)
	return d, key, MapErr(err)
}

// RevokeDevice revokes a door device, effective at once.
func (o *Ops) RevokeDevice(ctx context.Context, id string) (directory.Device, error) {
	d, err := o.sys.RevokeDevice(ctx, id)
	return d, MapErr(err)
}

// NoteDeviceSeen records a door device's request at at (this node's
// memory: a scan costs no write).
func (o *Ops) NoteDeviceSeen(deviceID string, at time.Time) {
	o.sys.Watch().NoteDeviceSeen(deviceID, at)
}

// SeenCell is a door device's last-seen cell: Note records a request at
// most once a doorwatch.SeenGrain.
type SeenCell = doorwatch.Seen

// DeviceSeenCell returns the device's last-seen cell, to note its requests
// into without a lookup each.
func (o *Ops) DeviceSeenCell(deviceID string) *SeenCell {
	return o.sys.Watch().DeviceSeenCell(deviceID)
}

// DeviceSeen answers when this node last saw the device.
func (o *Ops) DeviceSeen(deviceID string) (time.Time, bool) {
	return o.sys.Watch().DeviceSeen(deviceID)
}

// NewEventID returns a fresh event id for CreateEvent.
func (o *Ops) NewEventID() string { return o.sys.NewEventID() }

// CreateEvent creates event eventID owned by unitID with the core's
// create command cmd.
func (o *Ops) CreateEvent(ctx context.Context, unitID, eventID string, cmd event.Command) (any, error) {
	res, err := o.sys.CreateEvent(ctx, unitID, eventID, cmd)
	return res, MapErr(err)
}

// EventUnit returns the business unit that owns eventID.
func (o *Ops) EventUnit(eventID string) (string, bool) { return o.sys.EventUnit(eventID) }

// UnitEvents returns the unit's event ids, oldest first.
func (o *Ops) UnitEvents(unitID string) []string { return o.sys.UnitEvents(unitID) }

// PublishedCandidates returns, oldest first, the unit's events that may
// be published, created before the event after ("" for all); ok is false
// when after is not an event of the unit. The slice is shared: do not
// modify it.
func (o *Ops) PublishedCandidates(unitID, after string) ([]string, bool) {
	return o.sys.PublishedCandidates(unitID, after)
}

// Changed returns a channel closed at the event's next durable change
// made on this node (long polls and streams wait on it).
func (o *Ops) Changed(eventID string) <-chan struct{} { return o.sys.Watch().Changed(eventID) }

// NotePassVer records the newest pass version a read of the event saw.
func (o *Ops) NotePassVer(eventID string, ver int64) { o.sys.Watch().NotePassVer(eventID, ver) }

// PassVerCell returns the cell of the event's newest pass version as
// this node knows it, to compare with without a lookup; nil when none is
// known or on a cluster node (doorwatch.Watch.PassVerCell).
func (o *Ops) PassVerCell(eventID string) *atomic.Int64 { return o.sys.Watch().PassVerCell(eventID) }

// PassVerCaughtUp reports whether ver is the event's newest pass version
// as this node knows it (a door device caught up needs no ask).
func (o *Ops) PassVerCaughtUp(eventID string, ver int64) bool {
	return o.sys.Watch().PassVerCaughtUp(eventID, ver)
}

// Ready reports whether this node can make writes durable (cluster mode:
// it joined its cluster).
func (o *Ops) Ready() error { return o.sys.Ready() }

// StoreErr is the store's fault, once writes cannot be made durable.
func (o *Ops) StoreErr() error {
	if st := o.sys.Store(); st != nil {
		return st.Err()
	}
	return nil
}

// LinkSpec says the invitation or password link CreateLink makes.
type LinkSpec = actors.LinkSpec

// CreateLink makes a console invitation (or a member's password link)
// and answers its one-time token.
func (o *Ops) CreateLink(ctx context.Context, spec LinkSpec) (directory.Invitation, string, error) {
	inv, tok, err := o.sys.CreateLink(ctx, spec)
	return inv, tok, MapErr(err)
}

// RevokeLink revokes an unused link of unitID.
func (o *Ops) RevokeLink(ctx context.Context, id, unitID, by string) (directory.Invitation, error) {
	inv, err := o.sys.RevokeLink(ctx, id, unitID, by)
	return inv, MapErr(err)
}

// AcceptInvitation makes the member an invitation's token names.
func (o *Ops) AcceptInvitation(ctx context.Context, token, name, passwordHash string) (directory.Member, error) {
	m, err := o.sys.AcceptInvitation(ctx, token, name, passwordHash)
	return m, MapErr(err)
}

// SetPassword sets a member's password through a password link's token.
func (o *Ops) SetPassword(ctx context.Context, token, passwordHash string) (directory.Member, error) {
	m, err := o.sys.SetPassword(ctx, token, passwordHash)
	return m, MapErr(err)
}

// SetMemberRole sets (or, with "", removes) a member's role in unitID.
func (o *Ops) SetMemberRole(ctx context.Context, memberID, unitID, role string) (directory.Member, error) {
	m, err := o.sys.SetMemberRole(ctx, memberID, unitID, role)
	return m, MapErr(err)
}

// HookTypes are the webhook event types an endpoint can subscribe to.
func HookTypes() []string { return webhooks.HookTypes() }
