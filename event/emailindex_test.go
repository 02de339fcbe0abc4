package event

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// emailLog builds a log of n registrations over a few emails, written in
// mixed case, where some are cancelled and the email registers again: the
// index must list every registration of an email, active or not.
func emailLog(t *testing.T, seed uint64, n int) ([][]byte, []string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed))
	at := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	evt, typ := "evt_"+ulidish(0), "tt_"+ulidish(1)
	emails := []string{"ana@example.com", "bo@example.com", "cy@example.com", "dee@example.org", "eve@example.net"}
	chs := []Change{
		EventCreated{At: at, Name: "Index", Timezone: "UTC", Currency: "USD"},
		TicketTypeCreated{At: at, ID: typ, TicketTypeSpec: TicketTypeSpec{Name: "GA", Status: SellOpen}},
	}
	active := map[string]string{}
	for i := range n {
		at := at.Add(time.Duration(i) * time.Second)
		k := emails[rng.IntN(len(emails))]
		if id, ok := active[k]; ok {
			// One active registration per email: cancel it first, or
			// register a fresh address in the email's case variant.
			if rng.IntN(3) > 0 {
				chs = append(chs, RegistrationStatusChanged{At: at, ID: id, Status: RegCancelled, Reason: "test"})
				delete(active, k)
			} else {
				k = fmt.Sprintf("x%d.%s", i, k)
			}
		}
		email := k
		if rng.IntN(2) == 0 {
			email = strings.ToUpper(k[:1]) + k[1:]
		}
		id, code := "reg_"+ulidish(i+2), ulidish(i)[10:]
		status := RegConfirmed
		if rng.IntN(4) == 0 {
			status = RegPending
		}
		chs = append(chs, RegistrationCreated{At: at, ID: id, Email: email, Name: "P", TypeID: typ, Status: status,
			CheckinCode: "CHK-" + code, PassToken: evt + "." + code + code})
		active[k] = id
	}
	log := make([][]byte, len(chs))
	for i, ch := range chs {
		b, err := MarshalChange(ch)
		require.NoError(t, err)
		log[i] = b
	}
	return log, append(emails, "nobody@example.com", "  ANA@Example.com ")
}

// scanByEmail is the list by email as a scan of every registration.
func scanByEmail(s *State, email, status string) []string {
	var out []string
	for i := len(s.RegOrder) - 1; i >= 0; i-- {
		r := s.regAt(i)
		if normEmail(r.Email) == normEmail(email) && (status == "" || r.Status == status) {
			out = append(out, r.ID)
		}
	}
	return out
}

// requireListsByEmail pages through the list of each email and status
// with several page sizes and requires what a scan finds, in its order.
func requireListsByEmail(t *testing.T, m *Machine, emails []string) {
	t.Helper()
	for _, email := range emails {
		for _, status := range []string{"", RegConfirmed, RegPending, RegCancelled} {
			want := scanByEmail(m.State(), email, status)
			for _, limit := range []int{1, 2, 7, 100} {
				var got []string
				cursor := ""
				for pages := 0; ; pages++ {
					require.Less(t, pages, 1000)
					l, _, err := DecideOp(m, time.Now(), ListRegistrations{Email: email, Status: status, Limit: limit, Cursor: cursor})
					require.NoError(t, err)
					require.LessOrEqual(t, len(l.Data), limit)
					for _, r := range l.Data {
						got = append(got, r.ID)
					}
					if !l.HasMore {
						require.Nil(t, l.NextCursor)
						break
					}
					require.Len(t, l.Data, limit)
					cursor = *l.NextCursor
				}
				require.Equal(t, want, got, "email %q status %q limit %d", email, status, limit)
			}
		}
	}
}

// The list by email reads the email index and answers what a scan of
// every registration answers, live, after a replay, and after a snapshot
// load (in order and concurrently) plus a tail; the rebuilt index equals
// the one Apply kept.
func TestListRegistrationsByEmailUsesTheIndex(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			log, emails := emailLog(t, seed, 300)
			live := NewMachine("evt_"+ulidish(0), testConfig(), nil)
			half := len(log) / 2
			var snap []byte
			for i, b := range log {
				ch, err := UnmarshalChange(b)
				require.NoError(t, err)
				live.Apply(ch)
				if i == half {
					snap, err = MarshalState(live.State())
					require.NoError(t, err)
				}
			}
			requireListsByEmail(t, live, emails)
			require.Len(t, live.State().idx.emailPrev, len(live.State().RegOrder))

			replayed := replayLog(t, log, false)
			require.Equal(t, live.State().idx.regByEmail, replayed.State().idx.regByEmail)
			require.Equal(t, live.State().idx.emailPrev, replayed.State().idx.emailPrev)

			full, err := MarshalState(live.State())
			require.NoError(t, err)
			loaded := requireSameDecode(t, full)
			require.Equal(t, live.State().idx.regByEmail, loaded.idx.regByEmail)
			require.Equal(t, live.State().idx.emailPrev, loaded.idx.emailPrev)

			st, err := UnmarshalState(snap)
			require.NoError(t, err)
			tail := NewMachine("evt_"+ulidish(0), testConfig(), nil)
			tail.Restore(st)
			for _, b := range log[half+1:] {
				require.NoError(t, tail.ApplyRecord(b))
			}
			require.Equal(t, live.State().idx.regByEmail, tail.State().idx.regByEmail)
			require.Equal(t, live.State().idx.emailPrev, tail.State().idx.emailPrev)
			requireListsByEmail(t, tail, emails)
		})
	}
}

// A cursor that names no registration is refused, as by the scan.
func TestListRegistrationsByEmailRefusesAnUnknownCursor(t *testing.T) {
	log, _ := emailLog(t, 9, 10)
	m := replayLog(t, log, false)
	_, _, err := DecideOp(m, time.Now(), ListRegistrations{Email: "ana@example.com", Cursor: encodeCursor("reg_nope")})
	require.Error(t, err)
	_, _, err = DecideOp(m, time.Now(), ListRegistrations{Email: "nobody@example.com", Cursor: "!!"})
	require.Error(t, err)
}

// The list by email costs the email's registrations, not the event's.
func BenchmarkListRegistrationsByEmail(b *testing.B) {
	m := replayLog(b, registrationLog(b, 100_000), false)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		l, _, err := DecideOp(m, time.Now(), ListRegistrations{Email: fmt.Sprintf("p%d@bench.example", i%100_000), Limit: 20})
		if err != nil || len(l.Data) != 1 {
			b.Fatal(err, len(l.Data))
		}
	}
}

// The list by check-in code is one lookup in the code index, in any
// case, with the status and email filters applied; an unknown code lists
// nothing.
func TestListRegistrationsByCheckinCode(t *testing.T) {
	m := replayLog(t, registrationLog(t, 3000), false)
	first := m.State().regAt(0)
	for _, code := range []string{first.CheckinCode, strings.ToLower(first.CheckinCode), " " + first.CheckinCode + " "} {
		l, _, err := DecideOp(m, time.Now(), ListRegistrations{CheckinCode: code})
		require.NoError(t, err)
		require.Len(t, l.Data, 1, code)
		require.Equal(t, first.ID, l.Data[0].ID)
		require.False(t, l.HasMore)
	}
	for _, c := range []ListRegistrations{
		{CheckinCode: "CHK-NOSUCHCODE0000"},
		{CheckinCode: first.CheckinCode, Status: RegCancelled},
		{CheckinCode: first.CheckinCode, Email: "someone.else@example.com"},
	} {
		l, _, err := DecideOp(m, time.Now(), c)
		require.NoError(t, err)
		require.Empty(t, l.Data, "%+v", c)
	}
	l, _, err := DecideOp(m, time.Now(), ListRegistrations{CheckinCode: first.CheckinCode, Email: strings.ToUpper(first.Email), Status: RegConfirmed})
	require.NoError(t, err)
	require.Len(t, l.Data, 1)
}
