package actors

import (
	"context"
	"time"

	"ticketd/ask"
	"ticketd/directory"
)

// DeviceSpec describes a door device to create.
type DeviceSpec struct {
	UnitID, EventID, Name string
	Doors                 []directory.Door
}

// CreatedDevice is what CreateDevice's Recorder (ask.WithRecorder) is
// called with: the device and its one-time setup code.
type CreatedDevice struct {
	Device    directory.Device
	SetupCode string
}

// CreateDevice creates a pending door device and returns it with its
// one-time setup code, which is never available again.
func (s *System) CreateDevice(ctx context.Context, spec DeviceSpec) (directory.Device, string, error) {
	code := "ds_" + s.cfg.IDs.Code(24)
	d := directory.Device{ID: s.cfg.IDs.New("dev_"), UnitID: spec.UnitID, EventID: spec.EventID, Name: spec.Name, Doors: spec.Doors}
	// The answer holds the setup code, which the result does not.
	rec := withResult(ask.RecorderOf(ctx), func(res any) any {
		d, _ := res.(directory.Device)
		return CreatedDevice{Device: d, SetupCode: code}
	})
	res, err := s.askDirectory(ctx, &dirDecide{rec: rec, fn: func(st *directory.State, now time.Time) (any, directory.Change, error) {
		d.CreatedAt = now.UTC()
		ch, err := st.CreateDevice(d, code)
		if err != nil {
			return nil, nil, err
		}
		return ch.(directory.DeviceCreated).Device, ch, nil
	}})
	if err != nil {
		return directory.Device{}, "", err
	}
	return res.(directory.Device), code, nil
}

// InitializeDevice uses a setup code: it answers the device and its key
// "dk_...", which is never available again.
func (s *System) InitializeDevice(ctx context.Context, setupCode, name string) (directory.Device, string, error) {
	key := "dk_" + s.cfg.IDs.Code(32)
	res, err := s.askDirectory(ctx, &dirDecide{fn: func(st *directory.State, now time.Time) (any, directory.Change, error) {
		ch, err := st.InitializeDevice(setupCode, name, key, now)
		if err != nil {
			return nil, nil, err
		}
		id := ch.(directory.DeviceInitialized).DeviceID
		return func() any { d, _ := st.Device(id); return d }, ch, nil
	}})
	if err != nil {
		return directory.Device{}, "", err
	}
	return res.(directory.Device), key, nil
}

// RevokeDevice revokes a device at once and returns it.
func (s *System) RevokeDevice(ctx context.Context, id string) (directory.Device, error) {
	res, err := s.askDirectory(ctx, &dirDecide{rec: ask.RecorderOf(ctx), fn: func(st *directory.State, now time.Time) (any, directory.Change, error) {
		ch, err := st.RevokeDevice(id, now)
		if err != nil {
			return nil, nil, err
		}
		return func() any { d, _ := st.Device(id); return d }, ch, nil
	}})
	if err != nil {
		return directory.Device{}, err
	}
	return res.(directory.Device), nil
}
