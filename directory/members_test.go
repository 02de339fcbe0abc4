package directory

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func link(id, unit, email, role, token string) Invitation {
	return Invitation{ID: id, UnitID: unit, Email: email, Role: role, Hash: HashToken(token), By: "operator",
		CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
}

// TestMembersInviteAcceptResetRoles walks a member's life through the log
// encoding (step keeps a replica by replay): invited, accepted once only,
// a second unit joined with the same account, a password reset, roles
// changed and the last owner kept.
func TestMembersInviteAcceptResetRoles(t *testing.T) {
	live, replica := New(), New()
	for _, u := range []string{"bu_a", "bu_b"} {
		ch, err := live.CreateUnit(u, u, t0)
		step(t, live, replica, ch, err)
	}
	var fe *FieldError
	_, err := live.Invite(link("inv_x", "bu_a", "not-an-email", RoleOwner, "t"))
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "email", fe.Field)
	_, err = live.Invite(link("inv_x", "bu_a", "a@example.com", "root", "t"))
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "role", fe.Field)
	_, err = live.Invite(link("inv_x", "bu_nope", "a@example.com", RoleOwner, "t"))
	assert.ErrorIs(t, err, ErrNotFound)

	ch, err := live.Invite(link("inv_1", "bu_a", " Ann@Example.com ", RoleOwner, "tok1"))
	step(t, live, replica, ch, err)
	got, err := live.Link("tok1", t0.Add(time.Minute))
	require.NoError(t, err)
	assert.Equal(t, "ann@example.com", got.Email)
	_, err = live.Link("tok1", t0.Add(2*time.Hour))
	assert.ErrorIs(t, err, ErrLinkInvalid, "expired")
	_, err = live.Link("wrong", t0)
	assert.ErrorIs(t, err, ErrLinkInvalid)

	_, err = live.Accept("tok1", "mem_1", " ", "h", t0)
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "name", fe.Field)
	hash := HashPassword("correct horse battery", make([]byte, SaltLen))
	ch, err = live.Accept("tok1", "mem_1", "Ann", hash, t0.Add(time.Minute))
	step(t, live, replica, ch, err)
	_, err = live.Accept("tok1", "mem_2", "Ann", hash, t0.Add(time.Minute))
	assert.ErrorIs(t, err, ErrLinkInvalid, "a link is used once")

	m, ok := live.MemberByEmail("ANN@example.com")
	require.True(t, ok)
	assert.Equal(t, map[string]string{"bu_a": RoleOwner}, m.Roles)
	assert.True(t, VerifyPassword(m.PasswordHash, "correct horse battery"))
	assert.False(t, VerifyPassword(m.PasswordHash, "correct horse batterY"))

	_, err = live.Invite(link("inv_2", "bu_a", "ann@example.com", RoleViewer, "tok2"))
	require.ErrorAs(t, err, &fe, "already a member of the unit")

	// The same person joins unit B: the account is kept, a role added.
	ch, err = live.Invite(link("inv_3", "bu_b", "ann@example.com", RoleDoor, "tok3"))
	step(t, live, replica, ch, err)
	ch, err = live.Accept("tok3", "mem_ignored", "", "", t0.Add(time.Minute))
	step(t, live, replica, ch, err)
	m, _ = live.Member("mem_1")
	assert.Equal(t, map[string]string{"bu_a": RoleOwner, "bu_b": RoleDoor}, m.Roles)
	assert.Len(t, live.Members("bu_b"), 1)

	// Reset: only through a unit the member is in.
	_, err = live.ResetLink("mem_1", link("inv_r0", "bu_nope", "", "", "r0"))
	assert.ErrorIs(t, err, ErrNotFound)
	ch, err = live.ResetLink("mem_1", link("inv_r", "bu_a", "", "", "rtok"))
	step(t, live, replica, ch, err)
	_, err = live.Accept("rtok", "mem_x", "X", "h", t0)
	assert.ErrorIs(t, err, ErrLinkInvalid, "a reset link is not an invitation")
	ch, err = live.SetPassword("rtok", HashPassword("another long password", make([]byte, SaltLen)), t0.Add(2*time.Minute))
	step(t, live, replica, ch, err)
	m, _ = live.Member("mem_1")
	assert.True(t, VerifyPassword(m.PasswordHash, "another long password"))
	assert.Equal(t, t0.Add(2*time.Minute), m.PasswordAt)

	// The last owner stays; with a second owner the first can step down.
	_, err = live.SetRole("mem_1", "bu_a", RoleViewer, t0)
	require.ErrorAs(t, err, &fe)
	ch, err = live.Invite(link("inv_4", "bu_a", "bob@example.com", RoleOwner, "tok4"))
	step(t, live, replica, ch, err)
	ch, err = live.Accept("tok4", "mem_2", "Bob", hash, t0.Add(time.Minute))
	step(t, live, replica, ch, err)
	ch, err = live.SetRole("mem_1", "bu_a", "", t0)
	step(t, live, replica, ch, err)
	m, _ = live.Member("mem_1")
	assert.Equal(t, map[string]string{"bu_b": RoleDoor}, m.Roles)

	// Replay reached the same state.
	assert.Equal(t, live.Members("bu_a"), replica.Members("bu_a"))
	assert.Equal(t, live.Members("bu_b"), replica.Members("bu_b"))
	c := live.Clone()
	assert.Equal(t, live.Members("bu_b"), c.Members("bu_b"))
}

// TestLinksLapseAndAreBounded: expired links are dropped when the unit
// makes a new one, and open links per unit are bounded.
func TestLinksLapseAndAreBounded(t *testing.T) {
	s := New()
	ch, _ := s.CreateUnit("bu_a", "A", t0)
	s.Apply(ch)
	ch, err := s.Invite(link("inv_old", "bu_a", "old@example.com", RoleViewer, "old"))
	require.NoError(t, err)
	s.Apply(ch)
	later := link("inv_new", "bu_a", "new@example.com", RoleViewer, "new")
	later.CreatedAt, later.ExpiresAt = t0.Add(2*time.Hour), t0.Add(3*time.Hour)
	ch, err = s.Invite(later)
	require.NoError(t, err)
	s.Apply(ch)
	_, dropped := s.people.byHash[string(HashToken("old"))]
	assert.False(t, dropped, "the lapsed link is gone")
	assert.Len(t, s.Pending("bu_a", t0.Add(2*time.Hour)), 1)

	for i := 0; i < PendingMax-1; i++ {
		inv := link("inv_"+string(rune('a'+i%26))+itoa(i), "bu_a", "p"+itoa(i)+"@example.com", RoleViewer, "t"+itoa(i))
		inv.CreatedAt, inv.ExpiresAt = t0.Add(2*time.Hour), t0.Add(3*time.Hour)
		ch, err := s.Invite(inv)
		require.NoError(t, err)
		s.Apply(ch)
	}
	over := link("inv_over", "bu_a", "over@example.com", RoleViewer, "over")
	over.CreatedAt, over.ExpiresAt = t0.Add(2*time.Hour), t0.Add(3*time.Hour)
	_, err = s.Invite(over)
	var fe *FieldError
	assert.ErrorAs(t, err, &fe)
}

func TestVerifyPasswordRefusesGarbage(t *testing.T) {
	for _, h := range []string{"", "$argon2id$", "$argon2id$v=19$m=999999999,t=1,p=1$AAAA$AAAA", "$bcrypt$v=19$m=1,t=1,p=1$AAAA$AAAA"} {
		assert.False(t, VerifyPassword(h, "whatever password"), h)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestResetLinkAuthorityAndLifecycle: a password reset link is the
// operator's, or an owner's of every unit the member is in; one lives per
// member; links end on use, on a newer link, on revocation, on their
// maker's removal and on a password change; unit names refuse control
// characters and length. Every step goes through the log encoding.
func TestResetLinkAuthorityAndLifecycle(t *testing.T) {
	live, replica := New(), New()
	for _, u := range []string{"bu_a", "bu_b"} {
		ch, err := live.CreateUnit(u, u, t0)
		step(t, live, replica, ch, err)
	}
	join := func(inv Invitation, member string) {
		t.Helper()
		ch, err := live.Invite(inv)
		step(t, live, replica, ch, err)
		ch, err = live.Accept(string(inv.ID)+"tok", member, member, "h", t0)
		step(t, live, replica, ch, err)
	}
	tok := func(id, unit, email, role string) Invitation { return link(id, unit, email, role, id+"tok") }
	join(tok("i1", "bu_a", "alice@a.example", RoleOwner), "mem_alice") // owner of A only
	join(tok("i2", "bu_b", "bob@b.example", RoleOwner), "mem_bob")     // owner of B
	join(tok("i3", "bu_a", "bob@b.example", RoleOwner), "")            // and of A
	join(tok("i4", "bu_a", "sam@x.example", RoleViewer), "mem_sam")    // Sam in A...
	join(tok("i5", "bu_b", "sam@x.example", RoleAdmin), "")            // ...and in B

	reset := func(id, by string, at time.Time) (Change, error) {
		inv := Invitation{ID: id, UnitID: "bu_a", Hash: HashToken(id + "tok"), By: by, CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
		return live.ResetLink("mem_sam", inv)
	}
	_, err := reset("r0", "mem_alice", t0)
	assert.ErrorIs(t, err, ErrNotOwnerOfAll, "an owner of A alone may not reset a member who is also in B")
	assert.False(t, live.MayReset("mem_alice", "mem_sam"))
	assert.True(t, live.MayReset("mem_bob", "mem_sam"))
	assert.True(t, live.MayReset("operator", "mem_sam"))

	ch, err := reset("r1", "mem_bob", t0)
	step(t, live, replica, ch, err)
	ch, err = reset("r2", "operator", t0.Add(time.Minute))
	step(t, live, replica, ch, err)
	_, err = live.Link("r1tok", t0.Add(2*time.Minute))
	assert.ErrorIs(t, err, ErrLinkInvalid, "a newer reset link ends the older one")
	old, _ := live.LinkByID("r1")
	assert.Equal(t, EndReplaced, old.Ended)
	assert.Len(t, live.Pending("bu_b", t0.Add(2*time.Minute)), 1, "B's owners see Sam's reset link too")

	// Revoked from B (Sam is in B): it ends.
	ch, err = live.RevokeLink("r2", "bu_b", "mem_bob", t0.Add(3*time.Minute))
	step(t, live, replica, ch, err)
	_, err = live.Link("r2tok", t0.Add(3*time.Minute))
	assert.ErrorIs(t, err, ErrLinkInvalid, "a revoked link ends")
	ch, err = live.RevokeLink("r2", "bu_b", "mem_bob", t0.Add(4*time.Minute))
	assert.NoError(t, err)
	assert.Nil(t, ch, "revoking twice changes nothing")

	// Used: ends; the password change ends any other.
	ch, err = reset("r3", "mem_bob", t0.Add(5*time.Minute))
	step(t, live, replica, ch, err)
	ch, err = live.SetPassword("r3tok", "h2", t0.Add(6*time.Minute))
	step(t, live, replica, ch, err)
	_, err = live.SetPassword("r3tok", "h3", t0.Add(6*time.Minute))
	assert.ErrorIs(t, err, ErrLinkInvalid, "a used link ends")

	// The maker loses the owner role in A: the links Bob made there end
	// (an invitation of A, and the reset link of a member of A).
	ch, err = reset("r4", "mem_bob", t0.Add(7*time.Minute))
	step(t, live, replica, ch, err)
	inv := link("i6", "bu_a", "new@x.example", RoleViewer, "i6tok")
	inv.By, inv.CreatedAt, inv.ExpiresAt = "mem_bob", t0.Add(7*time.Minute), t0.Add(time.Hour)
	ch, err = live.Invite(inv)
	step(t, live, replica, ch, err)
	ch, err = live.SetRole("mem_bob", "bu_a", "", t0.Add(8*time.Minute))
	step(t, live, replica, ch, err)
	for _, id := range []string{"r4", "i6"} {
		got, _ := live.LinkByID(id)
		assert.Equal(t, EndMakerGone, got.Ended, id)
		assert.False(t, got.Usable(t0.Add(9*time.Minute)), id)
	}
	assert.Empty(t, live.Pending("bu_a", t0.Add(9*time.Minute)))

	// The replica (replayed from the log records) and a snapshot agree.
	assert.Equal(t, live.Pending("bu_b", t0), replica.Pending("bu_b", t0))
	snap, err := live.MarshalSnapshot()
	require.NoError(t, err)
	back, err := UnmarshalSnapshot(snap)
	require.NoError(t, err)
	for _, id := range []string{"r1", "r2", "r3", "r4", "i6"} {
		a, _ := replica.LinkByID(id)
		b, _ := back.LinkByID(id)
		l, _ := live.LinkByID(id)
		assert.Equal(t, l, a, id)
		assert.Equal(t, l, b, id)
	}

	// Unit names: bounded, one line, no control bytes.
	var fe *FieldError
	_, err = live.CreateUnit("bu_c", "Bad\x00Name", t0)
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "name", fe.Field)
	_, err = live.CreateUnit("bu_c", strings.Repeat("n", UnitNameMax+1), t0)
	require.ErrorAs(t, err, &fe)
	assert.Contains(t, fe.Reason, "at most 200 characters")
}
