package http

import (
	"bufio"
	"io"
	"net"
	"sync"
	"sync/atomic"

	"github.com/valyala/fasthttp"

	"ticketd/http/conns"
)

// PiecesAppender is an answer whose JSON is the concatenation of byte
// slices it keeps already (the change feed's pages: each change rendered
// once and shared by every follower). Large ones are written to the
// connection as those slices (writev), never copied into one buffer
// first: twenty followers of a drop were copying ~20 KB per order into
// page buffers of up to a megabyte each, allocated afresh per page (the
// body buffer pool keeps none that big), and the collector paid for them
// again. The slices must not change while the answer is written.
type PiecesAppender interface {
	JSONAppender
	// AppendPieces appends the slices, in order; their concatenation is
	// exactly what AppendJSON writes.
	AppendPieces(dst [][]byte) [][]byte
}

// piecesStreamMin is the least body written as its pieces: below it one
// copy into the response's pooled buffer costs less than the extra
// header flush (a syscall) the pieces need.
const piecesStreamMin = 32 << 10

// writePieces sets the answer of a PiecesAppender as the response body:
// a small one copied into the pooled body buffer, a large one as a body
// stream of its pieces (piecesBody), which fasthttp hands the connection's
// writer after the header.
func writePieces(rc *fasthttp.RequestCtx, out PiecesAppender) {
	rc.SetContentType("application/json")
	pb := getPiecesBody()
	pb.all = out.AppendPieces(pb.all[:0])
	pb.bufs = pb.all
	n := 0
	for _, b := range pb.all {
		n += len(b)
	}
	if n < piecesStreamMin {
		rc.Response.ResetBody()
		b := rc.Response.SwapBody(nil)[:0]
		for _, p := range pb.all {
			b = append(b, p...)
		}
		rc.Response.SwapBody(b)
		pb.release()
		return
	}
	pb.conn = conns.TCP(rc.Conn())
	rc.Response.SetBodyStream(pb, n)
}

// piecesBody is the body stream of a large PiecesAppender answer. fasthttp
// calls WriteTo with the connection's buffered writer, the header in it:
// the header is flushed and the pieces written with one writev per 1,024
// of them (net.Buffers), the kernel copying each from where it is kept.
// Read serves any other reader of the body (Response.Body, a test's
// in-memory connection) the same bytes. Close (fasthttp calls it when the
// body is written or dropped) gives it back to the pool.
type piecesBody struct {
	all  [][]byte    // the pieces as appended (kept for the pool: bufs is consumed)
	bufs net.Buffers // what is left to write
	conn *net.TCPConn
	done bool // given back (a second Close must not put it twice)
}

// piecesWritev counts the bodies written as pieces straight to their
// connection (a test sees that a large answer took that way).
var piecesWritev atomic.Int64

var piecesPool = sync.Pool{New: func() any { return new(piecesBody) }}

func getPiecesBody() *piecesBody {
	pb := piecesPool.Get().(*piecesBody)
	pb.done = false
	return pb
}

// SupportsBodyWriteTo tells fasthttp to hand the writer to WriteTo.
func (pb *piecesBody) SupportsBodyWriteTo() bool { return true }

// WriteTo writes every piece to w.
func (pb *piecesBody) WriteTo(w io.Writer) (int64, error) {
	if bw, ok := w.(*bufio.Writer); ok && pb.conn != nil {
		// w writes to pb.conn (fasthttp's writer of this request's
		// connection): what it holds, the header, goes first.
		if err := bw.Flush(); err != nil {
			return 0, err
		}
		piecesWritev.Add(1)
		return pb.bufs.WriteTo(pb.conn)
	}
	var n int64
	for len(pb.bufs) > 0 {
		m, err := w.Write(pb.bufs[0])
		n += int64(m)
		if err != nil {
			return n, err
		}
		pb.bufs = pb.bufs[1:]
	}
	return n, nil
}

// Read copies the next bytes of the pieces into p.
func (pb *piecesBody) Read(p []byte) (int, error) {
	n := 0
	for len(pb.bufs) > 0 && n < len(p) {
		m := copy(p[n:], pb.bufs[0])
		n += m
		if m == len(pb.bufs[0]) {
			pb.bufs = pb.bufs[1:]
		} else {
			pb.bufs[0] = pb.bufs[0][m:]
		}
	}
	if n == 0 && len(pb.bufs) == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// Close gives the body back to the pool.
func (pb *piecesBody) Close() error {
	pb.release()
	return nil
}

func (pb *piecesBody) release() {
	if pb.done {
		return
	}
	// The slices are the answer's (kept renderings): let them go.
	clear(pb.all)
	pb.all, pb.bufs, pb.conn, pb.done = pb.all[:0], nil, nil, true
	piecesPool.Put(pb)
}
