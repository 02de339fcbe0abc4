package directory

import (
	"encoding/json"
	"errors"
	"fmt"
)

// snapshotV1 is the whole state in its orders: units, keys, members and
// links, each as its record. The lookup indexes are rebuilt from them.
type snapshotV1 struct {
	Units       []Unit       `json:"units"`
	Keys        []Key        `json:"keys"`
	Members     []Member     `json:"members"`
	Invitations []Invitation `json:"invitations"`
	// Devices came later (decisions §18): a snapshot without them has
	// none.
	Devices []Device `json:"devices,omitempty"`
}

// MarshalSnapshot encodes the whole state: one version byte (1), then the
// JSON of its units, keys, members and links, each in its order. A state
// decoded from it equals the state replayed from the log it reflects.
func (s *State) MarshalSnapshot() ([]byte, error) {
	v := snapshotV1{
		Units:       make([]Unit, 0, len(s.unitOrder)),
		Keys:        make([]Key, 0, len(s.keyOrder)),
		Members:     make([]Member, 0, len(s.people.order)),
		Invitations: make([]Invitation, 0, len(s.people.invOrder)),
	}
	for _, id := range s.unitOrder {
		v.Units = append(v.Units, *s.units[id])
	}
	for _, id := range s.keyOrder {
		v.Keys = append(v.Keys, *s.keys[id])
	}
	for _, id := range s.people.order {
		v.Members = append(v.Members, *s.people.members[id])
	}
	for _, id := range s.people.invOrder {
		v.Invitations = append(v.Invitations, *s.people.invites[id])
	}
	for _, id := range s.devs.order {
		v.Devices = append(v.Devices, *s.devs.byID[id])
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("directory: marshal snapshot: %w", err)
	}
	return append([]byte{1}, b...), nil
}

// UnmarshalSnapshot decodes a state MarshalSnapshot encoded. Bad bytes
// give an error, never a panic.
func UnmarshalSnapshot(b []byte) (*State, error) {
	if len(b) == 0 || b[0] != 1 {
		return nil, errors.New("directory: unknown snapshot version")
	}
	var v snapshotV1
	if err := json.Unmarshal(b[1:], &v); err != nil {
		return nil, fmt.Errorf("directory: decode snapshot: %w", err)
	}
	s := New()
	for _, u := range v.Units {
		if u.ID == "" || s.units[u.ID] != nil {
			return nil, fmt.Errorf("directory: snapshot: unit %q missing or twice", u.ID)
		}
		UnitCreated{Unit: u}.apply(s)
	}
	for _, k := range v.Keys {
		if k.ID == "" || s.keys[k.ID] != nil {
			return nil, fmt.Errorf("directory: snapshot: key %q missing or twice", k.ID)
		}
		// A revoked key is created revoked: it is kept out of the
		// origin index, as its revocation took it out.
		KeyCreated{Key: k}.apply(s)
	}
	p := s.people
	for _, m := range v.Members {
		if m.ID == "" || p.members[m.ID] != nil {
			return nil, fmt.Errorf("directory: snapshot: member %q missing or twice", m.ID)
		}
		if m.Roles == nil {
			m.Roles = map[string]string{}
		}
		p.members[m.ID] = &m
		p.order = append(p.order, m.ID)
		p.byEmail[m.Email] = m.ID
	}
	for _, i := range v.Invitations {
		if i.ID == "" || p.invites[i.ID] != nil {
			return nil, fmt.Errorf("directory: snapshot: link %q missing or twice", i.ID)
		}
		p.invites[i.ID] = &i
		p.byHash[string(i.Hash)] = i.ID
		p.invOrder = append(p.invOrder, i.ID)
	}
	for _, d := range v.Devices {
		if d.ID == "" || s.devs.byID[d.ID] != nil {
			return nil, fmt.Errorf("directory: snapshot: device %q missing or twice", d.ID)
		}
		// A device is created as it stands: its key or its pending setup
		// code indexed, a revoked one's setup code not.
		DeviceCreated{Device: d}.apply(s)
	}
	return s, nil
}
