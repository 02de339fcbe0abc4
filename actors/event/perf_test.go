package event

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStateRecordLengths round-trips records whose length prefix takes
// one, two and three bytes (record moves the body for the first and last).
func TestStateRecordLengths(t *testing.T) {
	at := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	m := NewMachine("evt_1", testConfig(), nil)
	m.Apply(EventCreated{At: at, Name: "E", Timezone: "UTC", Currency: "USD"})
	for i, name := range []string{"", "short", strings.Repeat("n", 200), strings.Repeat("l", 20000)} {
		m.Apply(RegistrationCreated{At: at, ID: "reg_" + string(rune('a'+i)), Email: string(rune('a'+i)) + "@x.io", Name: name,
			Status: RegConfirmed, CheckinCode: "CHK-" + string(rune('A'+i)), PassToken: "evt_1." + string(rune('A'+i))})
	}
	b, err := MarshalState(m.State())
	require.NoError(t, err)
	got, err := UnmarshalState(b)
	require.NoError(t, err)
	for _, id := range m.State().RegOrder {
		require.Equal(t, *m.State().Regs[id], *got.Regs[id])
	}
	again, err := MarshalState(got)
	require.NoError(t, err)
	require.Equal(t, b, again)
}

// TestReserveChangesNothing replays one log with and without a capacity
// hint (too small, right, too large) and gets the same state.
func TestReserveChangesNothing(t *testing.T) {
	log := registrationLog(t, 300)
	want, err := MarshalState(replayLog(t, log, true).State())
	require.NoError(t, err)
	for _, hint := range []int{0, 10, len(log), 100 * len(log), -5, 1 << 40} {
		m := NewMachine("evt_"+ulidish(0), testConfig(), nil)
		m.Reserve(hint)
		for _, rec := range log {
			require.NoError(t, m.ApplyRecord(rec))
		}
		got, err := MarshalState(m.State())
		require.NoError(t, err)
		require.Equal(t, want, got, "hint %d", hint)
		require.Equal(t, max(min(hint, maxReserve)-len(log), 0), m.State().mem.reserve, "hint %d counts down per change", hint)
	}
}
