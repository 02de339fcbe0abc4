package directory

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"slices"
	"strings"
	"time"
)

// Devices (decisions §18): a door device belongs to one event of one
// business unit. It is made pending with a one-time setup code (only its
// SHA-256 hash is kept); initializing it with the code, within SetupTTL,
// gives it a device key "dk_..." (only its hash is kept, like a secret
// key's) and makes it active; revoking it makes its key answer 401 from
// the next request (the read view is replaced once the revocation is
// durable).

// Device statuses.
const (
	StatusPending = "pending"
	StatusActive  = "active"
	StatusRevoked = "revoked"
)

// SetupTTL is how long a device's setup code works.
const SetupTTL = 15 * time.Minute

// Door is one door a device may admit at: the event's door (SubjectID
// empty), a session's or a venue's.
type Door struct {
	SubjectType string `json:"subjectType"`
	SubjectID   string `json:"subjectId,omitempty"`
}

// Device is a door device record.
type Device struct {
	ID             string     `json:"id"`
	UnitID         string     `json:"unitId"`
	EventID        string     `json:"eventId"`
	Name           string     `json:"name"`
	Doors          []Door     `json:"doors"`
	SetupHash      []byte     `json:"setupHash,omitempty"`
	SetupExpiresAt time.Time  `json:"setupExpiresAt"`
	KeyHash        []byte     `json:"keyHash,omitempty"`
	CreatedAt      time.Time  `json:"createdAt"`
	ActivatedAt    *time.Time `json:"activatedAt,omitempty"`
	RevokedAt      *time.Time `json:"revokedAt,omitempty"`
}

// Status is the device's status: pending until initialized, then active,
// or revoked.
func (d *Device) Status() string {
	switch {
	case d.RevokedAt != nil:
		return StatusRevoked
	case d.KeyHash != nil:
		return StatusActive
	}
	return StatusPending
}

// Allows reports whether the device may admit at the door (subjectType,
// subjectID); an event door ignores subjectID.
func (d *Device) Allows(subjectType, subjectID string) bool {
	if subjectType == "event" {
		subjectID = ""
	}
	return slices.Contains(d.Doors, Door{SubjectType: subjectType, SubjectID: subjectID})
}

// ErrSetupInvalid is returned for an unknown, used or expired setup code,
// and for the code of a revoked device: one answer for all of them.
var ErrSetupInvalid = errors.New("directory: setup code invalid")

// DeviceCreated records a new, pending device.
type DeviceCreated struct{ Device Device }

// DeviceInitialized records a device's first use of its setup code: its
// key (by hash) and, when given, its new name.
type DeviceInitialized struct {
	DeviceID string
	KeyHash  []byte
	Name     string
	At       time.Time
}

// DeviceRevoked records a revocation, effective at At.
type DeviceRevoked struct {
	DeviceID string
	At       time.Time
}

func (DeviceCreated) kind() string { return "device.created" }

func (c DeviceCreated) check() error {
	if c.Device.ID == "" || c.Device.EventID == "" {
		return errors.New("missing device or event id")
	}
	return nil
}

func (c DeviceCreated) apply(s *State) {
	d := copyDevice(&c.Device)
	s.devs.byID[d.ID] = &d
	s.devs.order = append(s.devs.order, d.ID)
	if d.KeyHash != nil {
		s.devs.byKey[string(d.KeyHash)] = d.ID
	} else if d.SetupHash != nil && d.RevokedAt == nil {
		s.devs.bySetup[string(d.SetupHash)] = d.ID
	}
}

func (DeviceInitialized) kind() string { return "device.initialized" }

func (c DeviceInitialized) check() error {
	if c.DeviceID == "" || len(c.KeyHash) == 0 {
		return errors.New("missing device id or key")
	}
	return nil
}

func (c DeviceInitialized) apply(s *State) {
	d := s.devs.byID[c.DeviceID]
	if d == nil {
		panic("directory: initialize of unknown device " + c.DeviceID)
	}
	delete(s.devs.bySetup, string(d.SetupHash))
	d.KeyHash = append([]byte(nil), c.KeyHash...)
	at := c.At
	d.ActivatedAt = &at
	if c.Name != "" {
		d.Name = c.Name
	}
	s.devs.byKey[string(d.KeyHash)] = d.ID
}

func (DeviceRevoked) kind() string { return "device.revoked" }

func (c DeviceRevoked) check() error {
	if c.DeviceID == "" {
		return errors.New("missing device id")
	}
	return nil
}

func (c DeviceRevoked) apply(s *State) {
	d := s.devs.byID[c.DeviceID]
	if d == nil {
		panic("directory: revoke of unknown device " + c.DeviceID)
	}
	delete(s.devs.bySetup, string(d.SetupHash))
	at := c.At
	d.RevokedAt = &at
}

// devices holds the device records and their lookups.
type devices struct {
	byID    map[string]*Device
	order   []string
	byKey   map[string]string // string(key hash) -> device id
	bySetup map[string]string // string(setup hash) -> device id, pending devices only
}

func newDevices() devices {
	return devices{byID: map[string]*Device{}, byKey: map[string]string{}, bySetup: map[string]string{}}
}

func (d devices) clone() devices {
	c := newDevices()
	for _, id := range d.order {
		v := copyDevice(d.byID[id])
		c.byID[id] = &v
	}
	c.order = slices.Clone(d.order)
	for k, v := range d.byKey {
		c.byKey[k] = v
	}
	for k, v := range d.bySetup {
		c.bySetup[k] = v
	}
	return c
}

func copyDevice(d *Device) Device {
	c := *d
	c.Doors = slices.Clone(d.Doors)
	c.SetupHash = slices.Clone(d.SetupHash)
	c.KeyHash = slices.Clone(d.KeyHash)
	return c
}

// CreateDevice decides a new pending device; d carries its id, unit,
// event, doors (checked by the caller against the event) and CreatedAt,
// setupCode the code handed out once.
func (s *State) CreateDevice(d Device, setupCode string) (Change, error) {
	if _, ok := s.units[d.UnitID]; !ok {
		return nil, ErrNotFound
	}
	d.Name = strings.TrimSpace(d.Name)
	if d.Name == "" {
		return nil, &FieldError{Field: "name", Reason: "must not be empty"}
	}
	if len(d.Doors) == 0 {
		return nil, &FieldError{Field: "doors", Reason: "must name at least one door"}
	}
	d.SetupHash = HashToken(setupCode)
	d.SetupExpiresAt = d.CreatedAt.Add(SetupTTL)
	d.KeyHash, d.ActivatedAt, d.RevokedAt = nil, nil, nil
	return DeviceCreated{Device: d}, nil
}

// InitializeDevice decides the use of a setup code at now: the device it
// belongs to gets key (the whole key, handed out once) and, when name is
// not empty, that name. An unknown, used or expired code, or one of a
// revoked device, is ErrSetupInvalid.
func (s *State) InitializeDevice(setupCode, name, key string, now time.Time) (Change, error) {
	h := HashToken(setupCode)
	id, ok := s.devs.bySetup[string(h)]
	if !ok {
		return nil, ErrSetupInvalid
	}
	d := s.devs.byID[id]
	if d.Status() != StatusPending || subtle.ConstantTimeCompare(d.SetupHash, h) != 1 || !now.Before(d.SetupExpiresAt) {
		return nil, ErrSetupInvalid
	}
	return DeviceInitialized{DeviceID: id, KeyHash: HashSecret(key), Name: strings.TrimSpace(name), At: now.UTC()}, nil
}

// RevokeDevice decides a revocation. Revoking a revoked device changes
// nothing.
func (s *State) RevokeDevice(id string, now time.Time) (Change, error) {
	d, ok := s.devs.byID[id]
	if !ok {
		return nil, ErrNotFound
	}
	if d.RevokedAt != nil {
		return nil, nil
	}
	return DeviceRevoked{DeviceID: id, At: now.UTC()}, nil
}

// Device returns a copy of device id.
func (s *State) Device(id string) (Device, bool) {
	d, ok := s.devs.byID[id]
	if !ok {
		return Device{}, false
	}
	return copyDevice(d), true
}

// Devices lists the devices of an event in creation order.
func (s *State) Devices(eventID string) []Device {
	out := []Device{}
	for _, id := range s.devs.order {
		if d := s.devs.byID[id]; d.EventID == eventID {
			out = append(out, copyDevice(d))
		}
	}
	return out
}

// LookupDevice finds the active device a presented device key belongs
// to; a revoked device's key, or an unknown one, is not found.
func (s *State) LookupDevice(token string) (*Device, bool) {
	if !strings.HasPrefix(token, "dk_") {
		return nil, false
	}
	h := DeviceKeyHash(token)
	id, ok := s.devs.byKey[string(h[:])]
	if !ok {
		return nil, false
	}
	d := s.devs.byID[id]
	if d.RevokedAt != nil {
		return nil, false
	}
	return d, true
}

// DeviceKeyHash is the hash a device key is kept and found by
// (Device.KeyHash). The key is hashed from a copy on the stack: a
// device's every request looks it up, and HashSecret's conversion of a
// 35-byte key escapes.
func DeviceKeyHash(token string) [sha256.Size]byte {
	var buf [64]byte
	return sha256.Sum256(append(buf[:0], token...))
}

// ActiveDevices calls fn with every active device of the view and its
// key's hash (DeviceKeyHash, as a string): what LookupDevice finds, for a
// caller that keeps its own index of a view (the server's, one lookup a
// request). The devices are the view's: read-only.
func (s *State) ActiveDevices(fn func(keyHash string, d *Device)) {
	for h, id := range s.devs.byKey {
		if d := s.devs.byID[id]; d.RevokedAt == nil {
			fn(h, d)
		}
	}
}

// LookupDeviceID finds an active (not revoked) device by id.
func (s *State) LookupDeviceID(id string) (*Device, bool) {
	d, ok := s.devs.byID[id]
	if !ok || d.RevokedAt != nil {
		return nil, false
	}
	return d, true
}
