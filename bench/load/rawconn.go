package load

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"time"
)

// RawConn is one keep-alive HTTP/1.1 connection that sends requests built
// before the clock starts and reads each answer into a buffer of the
// caller's. It is for scenarios whose answers are large (door-sync's 500
// verdicts, ~175 kB): fasthttp's client reads each such body into a fresh
// buffer (its pool drops buffers past its calibrated size) and Do copies it
// again, so the load generator spent as much CPU a scan as the service,
// most of it faulting in new pages, on the two cores they share.
type RawConn struct {
	c net.Conn
	r *bufio.Reader
}

// DialRaw opens a connection to the host of base (http://host:port).
func DialRaw(base string) (*RawConn, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("bench: raw conn: %w", err)
	}
	c, err := net.DialTimeout("tcp", u.Host, 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("bench: raw conn: %w", err)
	}
	return &RawConn{c: c, r: bufio.NewReaderSize(c, 64<<10)}, nil
}

// Close closes the connection.
func (rc *RawConn) Close() error { return rc.c.Close() }

// BuildRequest returns the bytes of one request with a JSON body.
func BuildRequest(method, base, path, token string, body []byte) []byte {
	u, _ := url.Parse(base)
	var b bytes.Buffer
	b.Grow(len(body) + 256)
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, path, u.Host)
	if token != "" {
		fmt.Fprintf(&b, "Authorization: Bearer %s\r\n", token)
	}
	fmt.Fprintf(&b, "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	b.Write(body)
	return b.Bytes()
}

// Do writes req (from BuildRequest) and reads the answer's body into
// dst[:0], growing it only when the body is larger. Only a Content-Length
// body is read (the service answers JSON so); anything else is an error,
// as is a connection the server closes.
func (rc *RawConn) Do(req, dst []byte, timeout time.Duration) (status int, body []byte, err error) {
	_ = rc.c.SetDeadline(time.Now().Add(timeout))
	if _, err := rc.c.Write(req); err != nil {
		return 0, nil, fmt.Errorf("bench: raw conn: write: %w", err)
	}
	line, err := rc.r.ReadSlice('\n')
	if err != nil {
		return 0, nil, fmt.Errorf("bench: raw conn: status line: %w", err)
	}
	// HTTP/1.1 200 OK
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, nil, fmt.Errorf("bench: raw conn: status line %q", line)
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, nil, fmt.Errorf("bench: raw conn: status line %q", line)
	}
	n := -1
	for {
		h, err := rc.r.ReadSlice('\n')
		if err != nil {
			return 0, nil, fmt.Errorf("bench: raw conn: header: %w", err)
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		k, v, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			continue
		}
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			if n, err = strconv.Atoi(string(v)); err != nil {
				return 0, nil, fmt.Errorf("bench: raw conn: Content-Length %q", v)
			}
		case bytes.EqualFold(k, []byte("Transfer-Encoding")):
			return 0, nil, fmt.Errorf("bench: raw conn: Transfer-Encoding %q not read", v)
		case bytes.EqualFold(k, []byte("Connection")) && bytes.EqualFold(v, []byte("close")):
			defer rc.c.Close()
		}
	}
	if n < 0 {
		return 0, nil, fmt.Errorf("bench: raw conn: no Content-Length")
	}
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	dst = dst[:n]
	if _, err := io.ReadFull(rc.r, dst); err != nil {
		return 0, nil, fmt.Errorf("bench: raw conn: body: %w", err)
	}
	return status, dst, nil
}
