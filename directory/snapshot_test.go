package directory

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSnapshotEqualsReplay: a state decoded from the snapshot of a
// replayed state equals it (indexes included), whatever was revoked,
// joined, reset or dropped, and encodes to the same bytes again.
func TestSnapshotEqualsReplay(t *testing.T) {
	live, replica := New(), New()
	empty, err := replica.MarshalSnapshot()
	require.NoError(t, err)
	back, err := UnmarshalSnapshot(empty)
	require.NoError(t, err)
	require.Equal(t, replica, back, "the empty directory")

	exp := t0.Add(48 * time.Hour)
	for u := range 3 {
		unit := fmt.Sprintf("bu_%d", u)
		ch, err := live.CreateUnit(unit, "Unit "+unit, t0)
		step(t, live, replica, ch, err)
		for k := range 6 {
			key := Key{ID: fmt.Sprintf("key_%d_%d", u, k), UnitID: unit, Type: Secret, Name: "k", Version: "2026-08-01", CreatedAt: t0}
			if k%2 == 1 {
				key.Type = Publishable
				key.Origins = []string{"https://shop.example", fmt.Sprintf("https://u%d.example", u)}
			}
			if k%3 == 2 {
				key.ExpiresAt = &exp
			}
			prefix := "sk_"
			if key.Type == Publishable {
				prefix = "pk_"
			}
			ch, err := live.CreateKey(key, fmt.Sprintf("%ssecret_%d_%d", prefix, u, k))
			step(t, live, replica, ch, err)
		}
		ch, err = live.RevokeKey(fmt.Sprintf("key_%d_1", u), t0.Add(time.Hour))
		step(t, live, replica, ch, err)
		ch, err = live.RevokeKey(fmt.Sprintf("key_%d_2", u), t0.Add(time.Hour))
		step(t, live, replica, ch, err)
	}
	ch, err := live.Invite(link("inv_1", "bu_0", "ann@example.com", RoleOwner, "tok1"))
	step(t, live, replica, ch, err)
	ch, err = live.Accept("tok1", "mem_1", "Ann", "hash1", t0.Add(time.Minute))
	step(t, live, replica, ch, err)
	ch, err = live.Invite(link("inv_2", "bu_1", "ann@example.com", RoleViewer, "tok2"))
	step(t, live, replica, ch, err)
	ch, err = live.Accept("tok2", "", "", "", t0.Add(time.Minute))
	step(t, live, replica, ch, err)
	ch, err = live.Invite(link("inv_3", "bu_0", "bob@example.com", RoleAdmin, "tok3"))
	step(t, live, replica, ch, err)
	ch, err = live.Accept("tok3", "mem_2", "Bob", "hash2", t0.Add(time.Minute))
	step(t, live, replica, ch, err)
	ch, err = live.SetRole("mem_2", "bu_0", "", t0.Add(2*time.Minute)) // Bob in no unit now
	step(t, live, replica, ch, err)
	reset := link("inv_4", "bu_0", "", "", "tok4")
	ch, err = live.ResetLink("mem_1", reset)
	step(t, live, replica, ch, err)
	ch, err = live.SetPassword("tok4", "hash3", t0.Add(3*time.Minute))
	step(t, live, replica, ch, err)
	ch, err = live.Invite(link("inv_5", "bu_2", "cy@example.com", RoleDoor, "tok5")) // still open
	step(t, live, replica, ch, err)

	snap, err := replica.MarshalSnapshot()
	require.NoError(t, err)
	got, err := UnmarshalSnapshot(snap)
	require.NoError(t, err)
	require.Equal(t, replica, got)
	again, err := got.MarshalSnapshot()
	require.NoError(t, err)
	require.Equal(t, snap, again)

	// What a request reads works on the decoded state.
	k, ok := got.Lookup("sk_secret_0_0")
	require.True(t, ok)
	require.True(t, k.Active(t0))
	k, ok = got.Lookup("pk_secret_0_1")
	require.True(t, ok)
	require.False(t, k.Active(t0.Add(2*time.Hour)), "revoked")
	require.True(t, got.OriginListed("https://shop.example", t0))
	_, err = got.Link("tok5", t0.Add(time.Minute))
	require.NoError(t, err)
	_, ok = got.MemberByEmail("bob@example.com")
	require.True(t, ok, "a member in no unit is still known by email")
}

// TestSnapshotBadBytes: bad bytes give an error, never a panic.
func TestSnapshotBadBytes(t *testing.T) {
	for _, b := range []string{"", "\x02{}", "\x01", "\x01{", "\x01[]", `\x01{"units":[{"id":""}]}`,
		"\x01{\"units\":[{\"id\":\"bu_1\"},{\"id\":\"bu_1\"}]}", "\x01{\"keys\":[{\"id\":\"k\"},{\"id\":\"k\"}]}",
		"\x01{\"members\":[{\"id\":\"\"}]}", "\x01{\"invitations\":[{\"id\":\"i\"},{\"id\":\"i\"}]}"} {
		_, err := UnmarshalSnapshot([]byte(b))
		require.Error(t, err, "%q", b)
	}
}

func FuzzSnapshot(f *testing.F) {
	f.Add([]byte("\x01{}"))
	f.Add([]byte("\x01{\"keys\":[{\"id\":\"k\",\"type\":\"publishable\",\"origins\":[\"o\"]}]}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := UnmarshalSnapshot(b)
		if err != nil {
			return
		}
		_, err = s.MarshalSnapshot()
		require.NoError(t, err)
	})
}
