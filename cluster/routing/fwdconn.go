package routing

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"ticketd/cluster/node"

	"github.com/nats-io/nats.go"
)

// Forwarding connections: the batches of forwarded requests and their
// answers (asks.go) go between two nodes over one TCP connection of their
// own when the owner announces a forwarding address, instead of through
// both nodes' NATS servers. Over NATS a batch passes the forwarding node's
// client connection, its server, the route, the owner's server and its
// client connection, each a goroutine to wake on the way there and back,
// a good part of a forwarded order's time in a drop
// (bench/results/20261129-cluster-history.md). Over the
// connection it is a write and a read each way.
//
// A node listens on Config.ForwardAddr (default: the cluster address's
// host, any port; none when that host is unspecified, as 0.0.0.0) and
// announces the address in its heartbeat. A forwarding node dials an
// owner's announced address on first use, and forwards over NATS as
// before while it has none or cannot dial it (a dial refused is tried
// again after fwdRedial). The owner answers on the connection a batch
// came in on. A connection that breaks ends the wait of the requests sent
// over it with errOwnerGone (the outcome is unknown, as when an owner is
// lost); a paused owner's is ended by its silence (watchOwners), as over
// NATS. The port has the cluster port's trust: bind it where only the
// nodes reach it.
//
// A frame is a 4-byte big-endian length, then the subject and the reply
// subject a NATS message of the batch would have (uvarint-prefixed), then
// the batch.
const (
	fwdDialTimeout = time.Second
	fwdRedial      = 5 * time.Second
	fwdWriteWait   = 2 * node.PeerStale
	maxFwdFrame    = 2 * maxAskBytes
)

// listenForward starts the forwarding listener and announces it.
func (r *Router) listenForward() {
	addr := r.n.Config().ForwardAddr
	if addr == "" {
		host, _, err := net.SplitHostPort(r.n.Config().Addr)
		if ip := net.ParseIP(host); err != nil || host == "" || (ip != nil && ip.IsUnspecified()) {
			return // NATS only: no address the others could dial
		}
		addr = net.JoinHostPort(host, "0")
	} else if addr == "off" {
		return
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		r.n.Config().Logger.Warn("cluster: forwarding listener: forwarded requests come over NATS", "addr", addr, "err", err)
		return
	}
	r.fwdListener = l
	r.n.FwdAddr.Store(l.Addr().String())
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				r.serveConn(c)
			}()
		}
	}()
}

// fwdConn is one forwarding connection; its writes are whole frames.
type fwdConn struct {
	c    net.Conn
	mu   sync.Mutex
	w    *bufio.Writer
	dead bool
}

func newFwdConn(c net.Conn) *fwdConn {
	return &fwdConn{c: c, w: bufio.NewWriterSize(c, 64<<10)}
}

var errConnClosed = errors.New("cluster: forwarding connection closed")

// write sends m's subject, reply subject and data as one frame.
func (f *fwdConn) write(m *nats.Msg) error {
	head := appendBytes(nil, []byte(m.Subject))
	head = appendBytes(head, []byte(m.Reply))
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(head)+len(m.Data)))
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dead {
		return errConnClosed
	}
	// A peer that reads nothing for that long (paused) is taken as gone,
	// as its silence would tell (peerStale).
	_ = f.c.SetWriteDeadline(time.Now().Add(fwdWriteWait))
	_, _ = f.w.Write(n[:])
	_, _ = f.w.Write(head)
	_, _ = f.w.Write(m.Data)
	if err := f.w.Flush(); err != nil {
		f.dead = true
		_ = f.c.Close()
		return err
	}
	return nil
}

func (f *fwdConn) close() {
	f.mu.Lock()
	f.dead = true
	f.mu.Unlock()
	_ = f.c.Close()
}

// readFrame reads one frame as a NATS message.
func readFrame(r *bufio.Reader) (*nats.Msg, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxFwdFrame {
		return nil, fmt.Errorf("cluster: forwarding frame of %d bytes", size)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	wr := &wireReader{b: b}
	subj, err := wr.bytes()
	if err != nil {
		return nil, err
	}
	reply, err := wr.bytes()
	if err != nil {
		return nil, err
	}
	return &nats.Msg{Subject: string(subj), Reply: string(reply), Data: wr.b}, nil
}

// serveConn serves the batches a forwarding node sends over c, answering
// on c.
func (r *Router) serveConn(c net.Conn) {
	fc := newFwdConn(c)
	r.trackConn(fc, true)
	defer r.trackConn(fc, false)
	defer fc.close()
	br := bufio.NewReaderSize(c, 64<<10)
	queues := map[string]*answerQueue{}
	for {
		m, err := readFrame(br)
		if err != nil {
			return
		}
		to, ok := answerSubject(m.Reply)
		if !ok || !isBatch(m.Data) {
			r.n.Config().Logger.Warn("cluster: bad forwarding frame", "reply", m.Reply)
			return
		}
		q := queues[to]
		if q == nil {
			q = &answerQueue{r: r, subject: to, write: fc.write}
			queues[to] = q
		}
		r.serveBatchTo(m, q)
	}
}

// trackConn keeps the open connections, which Close closes (one opened
// once Close has run is closed at once).
func (r *Router) trackConn(fc *fwdConn, open bool) {
	r.pmu.Lock()
	defer r.pmu.Unlock()
	if open && r.conns == nil {
		fc.close()
	} else if open {
		r.conns[fc] = struct{}{}
	} else {
		delete(r.conns, fc)
	}
}

// conn is the forwarding connection to p's owner, dialled on first use;
// nil while the owner announces no address or cannot be dialled (the
// batch goes over NATS).
func (p *peer) conn() *fwdConn {
	addr := p.r.n.ForwardAddrOf(p.owner)
	p.cmu.Lock()
	defer p.cmu.Unlock()
	if p.fc != nil && p.fcAddr == addr {
		p.fc.mu.Lock()
		dead := p.fc.dead
		p.fc.mu.Unlock()
		if !dead {
			return p.fc
		}
	}
	if p.fc != nil {
		p.fc.close()
		p.fc = nil
	}
	if addr == "" || (p.failedAddr == addr && time.Since(p.failedAt) < fwdRedial) {
		return nil
	}
	c, err := net.DialTimeout("tcp", addr, fwdDialTimeout)
	if err != nil {
		p.failedAddr, p.failedAt = addr, time.Now()
		p.r.n.Config().Logger.Debug("cluster: forwarding connection: over NATS meanwhile", "owner", p.owner, "addr", addr, "err", err)
		return nil
	}
	fc := newFwdConn(c)
	p.fc, p.fcAddr = fc, addr
	p.r.trackConn(fc, true)
	go p.readAnswers(fc)
	return fc
}

// connected says whether this node holds a live forwarding connection to
// owner.
func (r *Router) connected(owner string) bool {
	r.pmu.Lock()
	p := r.peers[owner]
	r.pmu.Unlock()
	if p == nil {
		return false
	}
	p.cmu.Lock()
	fc := p.fc
	p.cmu.Unlock()
	if fc == nil {
		return false
	}
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return !fc.dead
}

// readAnswers takes the answers that come over fc until it breaks, then
// ends the wait of the requests still waiting: sent over it, their
// outcome is unknown.
func (p *peer) readAnswers(fc *fwdConn) {
	defer p.r.trackConn(fc, false)
	br := bufio.NewReaderSize(fc.c, 64<<10)
	for {
		m, err := readFrame(br)
		if err != nil {
			fc.close()
			p.failSentOver(fc, fmt.Errorf("%w: %s: forwarding connection: %v", errOwnerGone, p.owner, err))
			return
		}
		p.r.answered(m)
	}
}

// failSentOver answers err to the requests sent over fc still waiting.
func (p *peer) failSentOver(fc *fwdConn, err error) {
	var failed []*asking
	p.mu.Lock()
	for id, a := range p.waiting {
		if a.fc == fc {
			delete(p.waiting, id)
			failed = append(failed, a)
		}
	}
	p.mu.Unlock()
	for _, a := range failed {
		a.answer <- askAnswer{err: err}
	}
}
