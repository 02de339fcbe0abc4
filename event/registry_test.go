package event

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestChangeKindsRoundTrip checks every registered change kind: its decoder
// yields its own type, whose ChangeKind is the registered name, and a value
// survives MarshalChange and UnmarshalChange.
func TestChangeKindsRoundTrip(t *testing.T) {
	require.Len(t, kindByName, len(changeKinds))
	for _, k := range changeKinds {
		ch := k.decode(&dec{})
		require.Equal(t, k.name, ch.ChangeKind())
		b, err := MarshalChange(ch)
		require.NoError(t, err, k.name)
		back, err := UnmarshalChange(b)
		require.NoError(t, err, k.name)
		require.Equal(t, ch, back, k.name)
	}
}

// TestCommandKinds checks the command registry: one entry per type, and
// what IsRead tells the shell follows the registered mode, through the
// storefront wrapper too.
func TestCommandKinds(t *testing.T) {
	require.Len(t, commandByType, len(commandKinds))
	names := map[string]bool{}
	for _, k := range commandKinds {
		require.False(t, names[k.name], k.name)
		names[k.name] = true
	}
	require.True(t, IsRead(GetEvent{}))
	require.True(t, IsRead(GetForm{}))
	require.False(t, IsRead(PutForm{}))
	require.False(t, IsRead(PlaceOrder{}))
	require.True(t, IsRead(Storefront{Cmd: GetCatalog{}}))
	require.True(t, IsRead(OnStorefront(GetCatalog{})))
	require.False(t, IsRead(OnStorefront(PlaceOrder{})))
}

// TestEditRefusedWhenArchived: an edit (registry mode opEdit) is refused
// on an archived event before its own decide runs; a read is answered.
func TestEditRefusedWhenArchived(t *testing.T) {
	r := newScriptRunner(t)
	r.run(`CreateEvent {"name":"Conf","timezone":"UTC"}`)
	r.run(`ArchiveEvent`)
	require.Equal(t, "error FailedPrecondition: event is archived", r.run(`CreateVenue {"name":"Hall"}`))
	require.Contains(t, r.run(`ListVenues`), "result ")
	_, _, err := r.m.Decide(r.now, OnStorefront(GetCatalog{}))
	require.Error(t, err) // not published
}

// TestCoreEmailRule: the core refuses what the binder refuses (ValidEmail
// of the trimmed value, names of more than MaxNameLen characters), on
// every command that takes them, so a
// surface that skips the binder (the hosted pages, the shell) cannot let
// another address in.
func TestCoreEmailRule(t *testing.T) {
	r := newScriptRunner(t)
	for _, l := range []string{
		`CreateEvent {"name":"Conf","timezone":"UTC","startsAt":"2026-09-01T09:00:00Z"}`,
		`CreateTicketType {"name":"GA","capacity":10}`,
		`UpdateTicketType ID=tt_1 {"status":"open"}`,
		`UpdateEvent {"status":"published"}`,
	} {
		require.NotContains(t, r.run(l), "error", l)
	}
	items := []OrderItem{{ItemType: ItemRegistrationType, ItemID: "tt_1", Quantity: 1}}
	for _, bad := range []string{"a@localhost", "a b@x.io", "<a@x.io>", "a@x..io", "@x.io", "a@"} {
		for _, c := range []Command{
			CreateRegistration{Email: bad, RegistrationTypeID: "tt_1"},
			PlaceOrder{Email: bad, Items: items},
			CreateCheckoutSession{Email: bad, Items: items},
		} {
			require.Equal(t, "error InvalidArgument: email: must be an email address [email: must be an email address]", r.exec(c), "%T %q", c, bad)
		}
	}
	long := strings.Repeat("é", MaxNameLen+1)
	for _, c := range []Command{
		CreateRegistration{Email: "n@x.io", Name: long, RegistrationTypeID: "tt_1"},
		PlaceOrder{Email: "n@x.io", Name: long, Items: items},
		CreateCheckoutSession{Name: long, Items: items},
	} {
		require.Equal(t, "error InvalidArgument: name: must be at most 200 characters [name: must be at most 200 characters]", r.exec(c), "%T", c)
	}
	require.Contains(t, r.exec(CreateRegistration{Email: "  Ann@X.io ", Name: " " + long[:2*MaxNameLen] + " ", RegistrationTypeID: "tt_1"}), `"email":"Ann@X.io"`)
	require.Contains(t, r.exec(CreateCheckoutSession{Items: items}), "result ")
}
