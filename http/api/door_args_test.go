package api

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
)

// TestRawPassesArgs: the caught-up poll's scan of the raw query finds
// what fasthttp's parsed query finds (the first cursor and limit), and
// gives up on anything escaped.
func TestRawPassesArgs(t *testing.T) {
	for _, q := range []string{
		"", "cursor=abc", "limit=5&cursor=abc", "cursor=abc&limit=5", "cursor=abc&cursor=def", "cursor=&cursor=abc",
		"cursor", "cursor&limit", "limit=&cursor=a", "a=b&&cursor=x=y&limit=1", "cursors=a&xcursor=b", "&&&", "=cursor",
		"cursor=a&limit=1&limit=2", "CURSOR=a", "cursor=a;limit=3", "cursor=a#frag",
	} {
		cur, limit, raw := rawPassesArgs([]byte(q))
		require.True(t, raw, q)
		var args fasthttp.Args
		args.Parse(q)
		require.Equal(t, string(args.Peek("cursor")), string(cur), "cursor of %q", q)
		require.Equal(t, string(args.Peek("limit")), string(limit), "limit of %q", q)
		require.Equal(t, args.Has("cursor"), cur != nil, "cursor sent in %q", q)
		require.Equal(t, args.Has("limit"), limit != nil, "limit sent in %q", q)
	}
	for _, q := range []string{"%63ursor=a", "cursor=a%2Bb", "cursor=a+b", "x=%20&cursor=a"} {
		_, _, raw := rawPassesArgs([]byte(q))
		require.False(t, raw, q)
	}
}
