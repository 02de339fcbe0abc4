package http

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// toyPieces is an answer kept as pieces: n numbered records, every other
// run of them cut from one shared buffer (so some pieces follow each
// other in memory, as the feed's renderings do).
type toyPieces struct{ pieces [][]byte }

func newToyPieces(n int) toyPieces {
	var shared []byte
	var ends []int
	for i := range n {
		shared = fmt.Appendf(shared, `,{"n":%d,"pad":%q}`, i, strings.Repeat("x", i%97))
		ends = append(ends, len(shared))
	}
	p := toyPieces{pieces: [][]byte{[]byte(`{"data":[`)}}
	start := 0
	for i, end := range ends {
		w := shared[start:end:len(shared)]
		if i%3 == 2 {
			w = append([]byte(nil), w...) // a piece of its own
		}
		if i == 0 {
			w = w[1:]
		}
		p.pieces = append(p.pieces, w)
		start = end
	}
	p.pieces = append(p.pieces, []byte(`]}`))
	return p
}

func (p toyPieces) AppendJSON(b []byte) []byte {
	for _, w := range p.pieces {
		b = append(b, w...)
	}
	return b
}

func (p toyPieces) AppendPieces(dst [][]byte) [][]byte { return append(dst, p.pieces...) }

// TestPiecesAnswerWrittenAsPieces: an answer kept as pieces reaches the
// client byte for byte what AppendJSON writes, with its Content-Length,
// small ones (copied into the body buffer) and large ones (written to
// the connection as the pieces themselves) alike, one after another on
// one kept-alive connection, so the framing of each is exact.
func TestPiecesAnswerWrittenAsPieces(t *testing.T) {
	sizes := []int{0, 1, 10, 3000, 5, 20000, 2}
	routes := []Route{{Surface: Developer, Method: "GET", Path: "/v1/pieces/{n}", OperationID: "pieces", Success: 200,
		Handle: func(c *Ctx) (any, error) {
			n, err := strconv.Atoi(c.Param("n"))
			if err != nil {
				return nil, err
			}
			return newToyPieces(n), nil
		}}}
	cfg := DefaultConfig()
	cfg.Logger = slog.New(slog.DiscardHandler)
	srv, err := NewServer(cfg, newFakeAuth(), routes)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, srv.Shutdown(ctx))
		require.NoError(t, <-done)
	})
	conn, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(30*time.Second)))
	br := bufio.NewReader(conn)
	before := piecesWritev.Load()
	large := 0
	for _, n := range sizes {
		want := newToyPieces(n).AppendJSON(nil)
		if len(want) >= piecesStreamMin {
			large++
		}
		_, err := fmt.Fprintf(conn, "GET /v1/pieces/%d HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", n, skLive)
		require.NoError(t, err)
		status, hdr, body := readHTTPAnswer(t, br)
		require.Equal(t, 200, status, "%d pieces: %s", n, truncate(body, 200))
		require.Equal(t, "application/json", hdr["content-type"])
		require.Equal(t, strconv.Itoa(len(want)), hdr["content-length"])
		require.Equalf(t, string(want), string(body), "%d pieces", n)
	}
	require.Equal(t, 2, large, "two answers large enough to be written as pieces")
	require.Equal(t, int64(large), piecesWritev.Load()-before, "each large answer written straight to the connection")
}

// readHTTPAnswer reads one HTTP/1.1 answer with a Content-Length.
func readHTTPAnswer(t *testing.T, br *bufio.Reader) (int, map[string]string, []byte) {
	t.Helper()
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	f := strings.Fields(line)
	require.GreaterOrEqual(t, len(f), 2, "status line %q", line)
	status, err := strconv.Atoi(f[1])
	require.NoError(t, err)
	hdr := map[string]string{}
	for {
		l, err := br.ReadString('\n')
		require.NoError(t, err)
		l = strings.TrimRight(l, "\r\n")
		if l == "" {
			break
		}
		k, v, _ := strings.Cut(l, ":")
		hdr[strings.ToLower(k)] = strings.TrimSpace(v)
	}
	n, err := strconv.Atoi(hdr["content-length"])
	require.NoError(t, err, "content-length")
	body := make([]byte, n)
	_, err = io.ReadFull(br, body)
	require.NoError(t, err)
	return status, hdr, body
}
