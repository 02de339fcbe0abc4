package directory

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestActiveDevices: a view's active devices come with the hash their key
// is found by (DeviceKeyHash); pending and revoked devices do not come.
func TestActiveDevices(t *testing.T) {
	live, replica := New(), New()
	ch, err := live.CreateUnit("bu_1", "Unit", t0)
	step(t, live, replica, ch, err)
	keys := map[string]string{}
	for _, id := range []string{"dev_1", "dev_2", "dev_3"} {
		ch, err = live.CreateDevice(Device{ID: id, UnitID: "bu_1", EventID: "evt_1", Name: id, Doors: []Door{{SubjectType: "event"}}, CreatedAt: t0}, "ds_"+id)
		step(t, live, replica, ch, err)
		if id == "dev_3" {
			continue // stays pending
		}
		keys[id] = "dk_key_of_" + id
		ch, err = live.InitializeDevice("ds_"+id, "", keys[id], t0)
		step(t, live, replica, ch, err)
	}
	ch, err = live.RevokeDevice("dev_2", t0)
	step(t, live, replica, ch, err)

	for _, s := range []*State{live, replica} {
		got := map[string]string{}
		s.ActiveDevices(func(keyHash string, d *Device) { got[d.ID] = keyHash })
		h := DeviceKeyHash(keys["dev_1"])
		require.Equal(t, map[string]string{"dev_1": string(h[:])}, got)
		d, ok := s.LookupDevice(keys["dev_1"])
		require.True(t, ok)
		require.Equal(t, "dev_1", d.ID)
		_, ok = s.LookupDevice(keys["dev_2"])
		require.False(t, ok, "revoked")
	}
}
