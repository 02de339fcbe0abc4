package console

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSharedSessionRecord: a session record round-trips through its byte
// format, and bad bytes are an error, never a panic.
func TestSharedSessionRecord(t *testing.T) {
	at := time.Unix(0, 1795600000123456789)
	for _, s := range []session{
		{operator: true, csrf: randomToken(), created: at},
		{memberID: "mem_01abc", csrf: randomToken(), created: at},
	} {
		got, err := decodeSession(encodeSession(&s))
		require.NoError(t, err)
		require.Equal(t, s.operator, got.operator)
		require.Equal(t, s.memberID, got.memberID)
		require.Equal(t, s.csrf, got.csrf)
		require.True(t, s.created.Equal(got.created))
	}
	good := encodeSession(&session{memberID: "mem_1", csrf: "abc", created: at})
	for _, bad := range [][]byte{nil, {1}, {2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, good[:11], append([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 200}, "x"...)} {
		_, err := decodeSession(bad)
		require.Error(t, err, "%v", bad)
	}
}
