package api_test

// Black-box tests of list cursors that name no position: the outbox, the
// audit log and the request log answer 400 naming cursor, as every list
// does, instead of paging from wherever the garbage sorts.

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAPIListCursorsRefuseGarbage(t *testing.T) {
	t.Parallel()
	f := newAPIFx(t) // no SMTP: ticket mail stays in the outbox
	adm := f.admin(t)
	s := f.store(t, nil)
	apiRegister(t, s.dev, s.ev, s.tt, "ada@example.com")
	apiRegister(t, s.dev, s.ev, s.tt, "grace@example.com")
	apiWant(t, s.dev.Do("PATCH", "/v1/events/"+s.ev, map[string]any{"name": "Renamed"}), 200)

	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	garbage := []string{
		"!!!", // not base64url
		enc("hello"),
		enc("mail/"),
		enc("mail/" + s.ev + "/zzzzzzzzzzzzzzzz-0000"),
		enc("aud_0123"),
		enc("aud_ffffffffffffffff-00000001-00G0"),
		enc("18446744073709551615x"),
	}
	for _, base := range []string{
		"/admin/v1/outbox",
		"/admin/v1/business-units/" + s.ID + "/audit-log",
		"/admin/v1/business-units/" + s.ID + "/request-log",
	} {
		t.Run(base, func(t *testing.T) {
			for _, c := range garbage {
				e := apiWantErr(t, adm.Do("GET", base+"?cursor="+c, nil), 400, "INVALID_ARGUMENT")
				assert.Equalf(t, []string{"cursor"}, apiFields(e), "cursor %q", c)
			}
			long := strings.Repeat("A", 513)
			apiWant400(t, adm.AllowInvalidRequest().Do("GET", base+"?cursor="+long, nil), "cursor")

			// The cursors the listing hands out still page through it.
			all := apiData(t, apiWant(t, adm.Do("GET", base, nil), 200))
			require.GreaterOrEqual(t, len(all), 2)
			p1 := apiWant(t, adm.Do("GET", base+"?limit=1", nil), 200)
			require.Equal(t, true, p1["hasMore"])
			p2 := apiData(t, apiWant(t, adm.Do("GET", base+"?limit=1&cursor="+apiS(p1, "nextCursor"), nil), 200))
			require.Len(t, p2, 1)
			assert.Equal(t, all[1], p2[0])
		})
	}

	// A well-formed position whose entry is gone (mail delivered, audit
	// entry pruned) still pages on from where it sorts.
	first := apiData(t, apiWant(t, adm.Do("GET", "/admin/v1/outbox", nil), 200))[0]
	key := apiS(first, "key")
	gone := key[:len(key)-4] + "ffff"
	rest := apiWant(t, adm.Do("GET", "/admin/v1/outbox?cursor="+enc(gone), nil), 200)
	assert.NotContains(t, apiData(t, rest), first)
	apiWant(t, adm.Do("GET", "/admin/v1/business-units/"+s.ID+"/audit-log?cursor="+enc("aud_0000000000000000-00000000-0000"), nil), 200)
}
