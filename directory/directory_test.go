package directory

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 8, 22, 10, 0, 0, 0, time.UTC)

// apply decides with fn and applies the change, through the log encoding,
// to both the live state and a replica, so replay equivalence is checked on
// every step.
func step(t *testing.T, live, replica *State, ch Change, err error) {
	t.Helper()
	require.NoError(t, err)
	live.Apply(ch)
	rec, err := Marshal(ch)
	require.NoError(t, err)
	back, err := Unmarshal(rec)
	require.NoError(t, err)
	replica.Apply(back)
}

func TestUnitsKeysAndRevocation(t *testing.T) {
	live, replica := New(), New()
	ch, err := live.CreateUnit("bu_1", " Default ", t0)
	step(t, live, replica, ch, err)

	_, err = live.CreateUnit("bu_2", "  ", t0)
	assert.Error(t, err, "blank name")

	exp := t0.Add(time.Hour)
	ch, err = live.CreateKey(Key{ID: "key_s", UnitID: "bu_1", Type: Secret, Version: "2026-08-22", ExpiresAt: &exp}, "sk_SECRETSECRET")
	step(t, live, replica, ch, err)
	ch, err = live.CreateKey(Key{ID: "key_p", UnitID: "bu_1", Type: Publishable, Origins: []string{"https://shop.example"}}, "pk_PUBLIC")
	step(t, live, replica, ch, err)

	_, err = live.CreateKey(Key{ID: "key_x", UnitID: "bu_nope", Type: Secret}, "sk_x")
	assert.ErrorIs(t, err, ErrNotFound)

	// A key born expired (expiresAt at or before its creation) is refused
	// naming the field; one a nanosecond later is fine.
	for _, at := range []time.Time{t0.Add(-time.Hour), t0} {
		_, err = live.CreateKey(Key{ID: "key_e", UnitID: "bu_1", Type: Secret, CreatedAt: t0, ExpiresAt: &at}, "sk_E")
		var fe *FieldError
		require.ErrorAs(t, err, &fe, "expiresAt %s", at)
		assert.Equal(t, "expiresAt", fe.Field)
	}
	soon := t0.Add(time.Nanosecond)
	_, err = live.CreateKey(Key{ID: "key_e", UnitID: "bu_1", Type: Secret, CreatedAt: t0, ExpiresAt: &soon}, "sk_E")
	assert.NoError(t, err)
	_, err = live.CreateKey(Key{ID: "key_e", UnitID: "bu_1", Type: "root"}, "sk_E")
	var fe *FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "type", fe.Field)

	k, ok := live.Lookup("sk_SECRETSECRET")
	require.True(t, ok)
	assert.Equal(t, "key_s", k.ID)
	assert.NotContains(t, string(k.Hash), "SECRET", "only a hash is stored")
	assert.Empty(t, k.Token)
	assert.True(t, k.Active(t0))
	assert.False(t, k.Active(exp), "expired at expiresAt")

	_, ok = live.Lookup("sk_WRONG")
	assert.False(t, ok)
	_, ok = live.Lookup("pk_SECRETSECRET")
	assert.False(t, ok, "a key is found only under its own type prefix")

	assert.True(t, live.OriginListed("https://shop.example", t0))
	assert.False(t, live.OriginListed("https://evil.example", t0))

	ch, err = live.RevokeKey("key_p", t0.Add(time.Minute))
	step(t, live, replica, ch, err)
	ch, err = live.RevokeKey("key_p", t0.Add(2*time.Minute))
	assert.NoError(t, err)
	assert.Nil(t, ch, "revoking twice changes nothing")
	p, _ := live.Lookup("pk_PUBLIC")
	assert.False(t, p.Active(t0.Add(time.Minute)))
	assert.False(t, live.OriginListed("https://shop.example", t0.Add(time.Minute)), "a revoked key's origins no longer count")

	assert.Equal(t, live.Units(), replica.Units())
	assert.Equal(t, live.Keys("bu_1"), replica.Keys("bu_1"))
	assert.Equal(t, live.Keys("bu_1"), live.Clone().Keys("bu_1"))
}

func FuzzUnmarshal(f *testing.F) {
	for _, c := range []Change{
		UnitCreated{Unit: Unit{ID: "bu_1", Name: "x", CreatedAt: t0}},
		KeyCreated{Key: Key{ID: "k", UnitID: "bu_1", Type: Secret, Hash: []byte{1, 2}}},
		KeyRevoked{KeyID: "k", At: t0},
	} {
		b, err := Marshal(c)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Unmarshal(b)
		if err != nil {
			return
		}
		again, err := Marshal(c)
		require.NoError(t, err)
		_, err = Unmarshal(again)
		require.NoError(t, err)
	})
}

// TestOriginIndex checks the origin index against the scan it replaces:
// for every origin and time, listed exactly when some unrevoked active
// publishable key lists it, through creation, expiry, revocation, replay
// and Clone.
func TestOriginIndex(t *testing.T) {
	live, replica := New(), New()
	ch, err := live.CreateUnit("bu_1", "Default", t0)
	step(t, live, replica, ch, err)
	h1, h2 := t0.Add(time.Hour), t0.Add(2*time.Hour)
	keys := []Key{
		{ID: "k1", Origins: []string{"https://a.example", "https://b.example"}, ExpiresAt: &h1},
		{ID: "k2", Origins: []string{"https://a.example"}, ExpiresAt: &h2},
		{ID: "k3", Origins: []string{"https://c.example", "https://c.example"}},
		{ID: "k4", Origins: []string{"https://c.example", "https://d.example"}, ExpiresAt: &h1},
		{ID: "k5", Type: Secret, Origins: []string{"https://s.example"}},
	}
	for _, k := range keys {
		k.UnitID = "bu_1"
		if k.Type == "" {
			k.Type = Publishable
		}
		ch, err := live.CreateKey(k, "pk_"+k.ID)
		step(t, live, replica, ch, err)
	}
	scan := func(s *State, origin string, now time.Time) bool {
		for _, k := range s.keys {
			if k.Type == Publishable && k.Active(now) && slices.Contains(k.Origins, origin) {
				return true
			}
		}
		return false
	}
	check := func(what string) {
		t.Helper()
		for _, s := range []*State{live, replica, live.Clone()} {
			for _, o := range []string{"https://a.example", "https://b.example", "https://c.example", "https://d.example", "https://s.example", "https://x.example"} {
				for _, now := range []time.Time{t0, h1.Add(-time.Second), h1, h2.Add(-time.Second), h2, h2.Add(time.Hour)} {
					assert.Equal(t, scan(s, o, now), s.OriginListed(o, now), "%s: %s at %s", what, o, now)
				}
			}
		}
	}
	check("created")
	for _, id := range []string{"k2", "k3", "k1", "k4"} {
		ch, err := live.RevokeKey(id, t0)
		step(t, live, replica, ch, err)
		check("revoked " + id)
	}
	assert.Empty(t, live.byOrigin, "every publishable key revoked")
}

// TestOriginListedManyKeys: the preflight check costs one map lookup with
// 10,000 publishable keys (the scan it replaced read every key).
func TestOriginListedManyKeys(t *testing.T) {
	s := New()
	s.Apply(UnitCreated{Unit: Unit{ID: "bu_1", Name: "u", CreatedAt: t0}})
	for i := 0; i < 10_000; i++ {
		id := "k" + strconv.Itoa(i)
		s.Apply(KeyCreated{Key: Key{ID: id, UnitID: "bu_1", Type: Publishable, Token: "pk_" + id,
			Origins: []string{"https://shop" + strconv.Itoa(i) + ".example"}}})
	}
	require.True(t, s.OriginListed("https://shop9999.example", t0))
	const n = 100_000
	start := time.Now()
	for i := 0; i < n; i++ {
		if s.OriginListed("https://evil.example", t0) {
			t.Fatal("listed")
		}
	}
	per := time.Since(start) / n
	t.Logf("OriginListed of an unlisted origin among 10,000 keys: %s", per)
	require.Less(t, per, 5*time.Microsecond, "a scan of 10,000 keys takes far longer")
}
