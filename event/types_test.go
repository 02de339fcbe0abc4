package event

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMoneyJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Money
		err  bool
	}{
		{"49.99", 4999, false},
		{"50", 5000, false},
		{"0", 0, false},
		{"0.5", 50, false},
		{"1.10", 110, false},
		{"1.999", 0, true},
		{"-1", 0, true},
		{"1e2", 10000, false},
		{"1E2", 10000, false},
		{"1e+2", 10000, false},
		{"4999e-2", 4999, false},
		{"0.5e1", 500, false},
		{"10.000", 1000, false},
		{"1.2300e1", 1230, false},
		{"5e-2", 5, false},
		{"-0", 0, false},
		{"0e99999999", 0, false},
		{"1e-3", 0, true},
		{"1.001", 0, true},
		{"1e99999999999", 0, true},
		{"1e13", 1_000_000_000_000_000, false},
		{"1e14", 0, true},
		{"10000000000000.001e1", 0, true},
		{"1e12", 100_000_000_000_000, false},
		{"-1e2", 0, true},
		{"1e", 0, true},
		{"1e+-2", 0, true},
		{`"49.99"`, 0, true},
		{"null", 0, true},
		{"01", 0, true},
		{"1.", 0, true},
		{"99999999999999999999", 0, true},
		{"10000000000000", 1_000_000_000_000_000, false},
		{"10000000000000.01", 0, true},
	} {
		var m Money
		err := json.Unmarshal([]byte(tc.in), &m)
		if tc.err {
			require.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, m, tc.in)
	}
	for m, want := range map[Money]string{4999: "49.99", 5000: "50", 0: "0", 110: "1.1", 5: "0.05"} {
		b, err := json.Marshal(m)
		require.NoError(t, err)
		require.Equal(t, want, string(b))
	}
	sc := Money(0).JSONSchema()
	require.Equal(t, "double", sc["format"], "generators pick a 64-bit type")
	require.NotContains(t, sc, "multipleOf", "validators check it in floating point")
	require.Contains(t, sc["description"], "at most two decimals")
}

func TestOptJSON(t *testing.T) {
	var p struct {
		A Opt[int]    `json:"a,omitzero"`
		B Opt[int]    `json:"b,omitzero"`
		C Opt[string] `json:"c,omitzero"`
	}
	require.NoError(t, json.Unmarshal([]byte(`{"a":null,"b":3}`), &p))
	require.Equal(t, Opt[int]{Set: true, Null: true}, p.A)
	require.Equal(t, Some(3), p.B)
	require.False(t, p.C.Set)
	b, err := json.Marshal(p)
	require.NoError(t, err)
	require.Equal(t, `{"a":null,"b":3}`, string(b))
	require.Error(t, json.Unmarshal([]byte(`{"b":"x"}`), &p))
	require.Equal(t, 0, Opt[int]{}.OptionalElem())
}

func TestTimeJSON(t *testing.T) {
	var v Time
	require.NoError(t, json.Unmarshal([]byte(`"2026-08-22T12:00:00.5+02:00"`), &v))
	b, err := json.Marshal(v)
	require.NoError(t, err)
	require.Equal(t, `"2026-08-22T10:00:00Z"`, string(b))
	require.Error(t, json.Unmarshal([]byte(`"yesterday"`), &v))
	require.Error(t, json.Unmarshal([]byte(`12`), &v))
	require.Equal(t, "date-time", Time{}.JSONSchema()["format"])
}

func TestEventIDHelpers(t *testing.T) {
	id, ok := EventIDFromPassToken("evt_abc.TOKEN")
	require.True(t, ok)
	require.Equal(t, "evt_abc", id)
	_, ok = EventIDFromPassToken("nodot")
	require.False(t, ok)
}

// TestAgendaReset: moving the start of an event with agenda sessions needs
// confirmAgendaReset, which clears the agenda.
func TestAgendaReset(t *testing.T) {
	m := NewMachine("evt_1", testConfig(), newSeqIDs(1))
	now := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	do := func(c Command) (any, error) { return step(m, now, c) }
	start := Time{time.Date(2026, 9, 1, 9, 0, 0, 0, time.UTC)}
	_, err := do(CreateEvent{Name: "E", Timezone: "UTC", StartsAt: &start})
	require.NoError(t, err)
	// The program feature fills sessions; here the state is set directly.
	m.State().Sessions["ses_1"] = &SessionRec{ID: "ses_1", Title: "Keynote"}
	m.State().SessionOrder = []string{"ses_1"}

	_, err = do(UpdateEvent{Name: Some("E2")})
	require.NoError(t, err, "not moving the start needs no confirmation")
	moved := Some(Time{start.Add(24 * time.Hour)})
	_, err = do(UpdateEvent{StartsAt: moved})
	require.Equal(t, FailedPrecondition, err.(*Error).Code)
	require.Len(t, m.State().Sessions, 1)
	res, err := do(UpdateEvent{StartsAt: moved, ConfirmAgendaReset: true})
	require.NoError(t, err)
	require.Equal(t, "2026-09-02T09:00:00Z", res.(Event).StartsAt.UTC().Format(time.RFC3339))
	require.Empty(t, m.State().Sessions)
	require.Empty(t, m.State().SessionOrder)
}

// TestPassAndCheckinCode: rotating a pass kills the old link; the check-in
// code works case-insensitively.
func TestPassAndCheckinCode(t *testing.T) {
	m := NewMachine("evt_1", testConfig(), newSeqIDs(1))
	now := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	do := func(c Command) any { return mustStep(t, m, now, c) }
	do(CreateEvent{Name: "E", Timezone: "UTC"})
	reg := do(CreateRegistration{Email: "a@b.c"}).(RegistrationResult)
	tok := reg.PassURL[len("http://t/pass/"):]
	ev, ok := EventIDFromPassToken(tok)
	require.True(t, ok)
	require.Equal(t, "evt_1", ev)
	pass := do(GetPass{Token: tok}).(Pass)
	require.Equal(t, reg.ID, pass.Registration.ID)
	require.Equal(t, "E", pass.Event.Name)

	rot := do(RotatePass{ID: reg.ID}).(Registration)
	require.NotEqual(t, reg.PassURL, rot.PassURL)
	_, _, err := m.Decide(now, GetPass{Token: tok})
	require.Equal(t, NotFound, err.(*Error).Code)
	do(GetPass{Token: rot.PassURL[len("http://t/pass/"):]})

	res := do(RecordCheckin{CheckinCode: " " + toLower(reg.CheckinCode), SubjectType: "event"}).(CheckinResult)
	require.False(t, res.AlreadyCheckedIn)
	require.Equal(t, reg.ID, res.Checkin.RegistrationID)
	res = do(RecordCheckin{RegistrationID: reg.ID, SubjectType: "event"}).(CheckinResult)
	require.True(t, res.AlreadyCheckedIn)
}

func toLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return string(b)
}

// TestStorefrontWrapper: storefront commands see only published events.
func TestStorefrontWrapper(t *testing.T) {
	m := NewMachine("evt_1", testConfig(), newSeqIDs(1))
	now := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	code := func(c Command) Code {
		res, chs, err := m.Decide(now, c)
		if err != nil {
			return err.(*Error).Code
		}
		require.NotNil(t, res)
		for _, ch := range chs {
			m.Apply(ch)
		}
		return 0
	}
	require.Equal(t, NotFound, code(Storefront{Cmd: GetEvent{}}), "no event yet")
	start := Time{now.Add(time.Hour)}
	require.Equal(t, Code(0), code(CreateEvent{Name: "E", Timezone: "UTC", StartsAt: &start}))
	require.Equal(t, NotFound, code(Storefront{Cmd: GetEvent{}}), "draft")
	require.Equal(t, Code(0), code(GetEvent{}), "the Developer API sees drafts")
	require.Equal(t, Code(0), code(UpdateEvent{Status: Some(EventPublished)}))
	require.Equal(t, Code(0), code(Storefront{Cmd: GetEvent{}}))
	require.Equal(t, InvalidArgument, code(Storefront{Cmd: Storefront{Cmd: GetEvent{}}}))
	require.Equal(t, NotFound, code(Storefront{}))
	require.Equal(t, Code(0), code(ArchiveEvent{}))
	require.Equal(t, NotFound, code(Storefront{Cmd: GetCatalog{}}), "archived")
}

// TestExamplesDecode: every example body decodes strictly into its command,
// so the documents never show a body the API refuses.
func TestExamplesDecode(t *testing.T) {
	type exampler interface{ Example() any }
	for name, typ := range commandTypes() {
		ex, ok := reflect.Zero(typ).Interface().(exampler)
		if !ok {
			continue
		}
		b, err := json.Marshal(ex.Example())
		require.NoError(t, err, name)
		v := reflect.New(typ)
		d := json.NewDecoder(bytes.NewReader(b))
		d.DisallowUnknownFields()
		require.NoError(t, d.Decode(v.Interface()), "%s example %s", name, b)
	}
}

// TestTokensAfterSnapshot: the lazily built token indexes of a loaded
// snapshot answer pass pages and scans, rotations included.
func TestTokensAfterSnapshot(t *testing.T) {
	m := NewMachine("evt_1", testConfig(), newSeqIDs(1))
	now := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	do := func(c Command) any { return mustStep(t, m, now, c) }
	do(CreateEvent{Name: "E", Timezone: "UTC"})
	a := do(CreateRegistration{Email: "a@b.c"}).(RegistrationResult)
	b := do(CreateRegistration{Email: "b@b.c"}).(RegistrationResult)
	snap, err := MarshalState(m.State())
	require.NoError(t, err)
	for _, first := range []string{"rotate", "pass", "scan"} {
		s, err := UnmarshalState(snap)
		require.NoError(t, err)
		m.Restore(s)
		oldTok := a.PassURL[len("http://t/pass/"):]
		if first == "rotate" {
			rot := do(RotatePass{ID: a.ID}).(Registration)
			_, _, err := m.Decide(now, GetPass{Token: oldTok})
			require.Error(t, err, "old token after rotation")
			require.Equal(t, a.ID, do(GetPass{Token: rot.PassURL[len("http://t/pass/"):]}).(Pass).Registration.ID)
		}
		if first == "pass" {
			require.Equal(t, a.ID, do(GetPass{Token: oldTok}).(Pass).Registration.ID)
		}
		res := do(RecordCheckin{CheckinCode: b.CheckinCode, SubjectType: "event"}).(CheckinResult)
		require.Equal(t, b.ID, res.Checkin.RegistrationID)
		c := do(CreateRegistration{Email: "c@b.c"}).(RegistrationResult)
		require.Equal(t, c.ID, do(RecordCheckin{CheckinCode: c.CheckinCode, SubjectType: "event"}).(CheckinResult).Checkin.RegistrationID)
	}
}

// TestMoneyAppendJSON checks the appender against the plain definition:
// major units, a dot and the cents without trailing zeros.
func TestMoneyAppendJSON(t *testing.T) {
	ref := func(m Money) string {
		neg := m < 0
		if neg {
			m = -m
		}
		s := strconv.FormatInt(int64(m/100), 10)
		if c := m % 100; c != 0 {
			s += "." + strings.TrimRight(fmt.Sprintf("%02d", int64(c)), "0")
		}
		if neg {
			s = "-" + s
		}
		return s
	}
	for _, m := range []Money{0, 1, 5, 9, 10, 50, 99, 100, 101, 110, 4999, 5000, 123456789, -1, -5, -50, -4999, moneyMax} {
		require.Equal(t, ref(m), m.String(), "%d", int64(m))
		b, err := m.MarshalJSON()
		require.NoError(t, err)
		require.Equal(t, ref(m), string(b))
		require.Equal(t, "x"+ref(m), string(m.AppendJSON([]byte("x"))))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		m := Money(r.Int64N(2*int64(moneyMax)) - int64(moneyMax))
		require.Equal(t, ref(m), m.String(), "%d", int64(m))
	}
}

func TestTimeAppendJSON(t *testing.T) {
	at := Time{time.Date(2026, 8, 22, 12, 0, 5, 999_999_999, time.FixedZone("x", 2*3600))}
	b, err := at.MarshalJSON()
	require.NoError(t, err)
	require.Equal(t, `"2026-08-22T10:00:05Z"`, string(b))
	require.Equal(t, `x"2026-08-22T10:00:05Z"`, string(at.AppendJSON([]byte("x"))))
}
