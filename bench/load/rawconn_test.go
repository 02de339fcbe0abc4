package load

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rawServer answers each request on a connection with answer(i) (the
// i-th request of that connection), after checking its body arrived whole.
func rawServer(t *testing.T, answer func(i int, body string) string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for i := 0; ; i++ {
					n := -1
					for {
						line, err := r.ReadString('\n')
						if err != nil {
							return
						}
						line = strings.TrimRight(line, "\r\n")
						if line == "" {
							break
						}
						if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
							fmt.Sscan(v, &n)
						}
					}
					body := make([]byte, n)
					if _, err := ioReadFull(r, body); err != nil {
						return
					}
					if _, err := c.Write([]byte(answer(i, string(body)))); err != nil {
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

func ioReadFull(r *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func TestRawConnKeepAliveIntoCallersBuffer(t *testing.T) {
	base := rawServer(t, func(i int, body string) string {
		out := fmt.Sprintf(`{"n":%d,"echo":%s}`, i, body)
		return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(out), out)
	})
	rc, err := DialRaw(base)
	require.NoError(t, err)
	defer rc.Close()
	req := BuildRequest("POST", base, "/door/v1/scans", "dk_x", []byte(`{"scans":[]}`))
	require.Contains(t, string(req), "Authorization: Bearer dk_x\r\n")
	require.Contains(t, string(req), "Content-Length: 12\r\n\r\n{\"scans\":[]}")

	buf := make([]byte, 0, 4096)
	for i := range 3 { // one connection, three requests
		st, body, err := rc.Do(req, buf[:0], 5*time.Second)
		require.NoError(t, err)
		require.Equal(t, 200, st)
		require.Equal(t, fmt.Sprintf(`{"n":%d,"echo":{"scans":[]}}`, i), string(body))
		require.Equal(t, &buf[:1][0], &body[:1][0], "read into the caller's buffer")
	}
	// A body larger than the buffer gets its own.
	st, body, err := rc.Do(req, make([]byte, 0, 4), 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, 200, st)
	require.Equal(t, `{"n":3,"echo":{"scans":[]}}`, string(body))
}

func TestRawConnRefusesWhatItCannotRead(t *testing.T) {
	base := rawServer(t, func(i int, _ string) string {
		if i == 0 {
			return "HTTP/1.1 400 Bad Request\r\nContent-Length: 2\r\n\r\n{}"
		}
		return "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
	})
	rc, err := DialRaw(base)
	require.NoError(t, err)
	defer rc.Close()
	req := BuildRequest("GET", base, "/x", "", nil)
	st, body, err := rc.Do(req, nil, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, 400, st, "a status other than 200 is the caller's to judge")
	require.Equal(t, "{}", string(body))
	_, _, err = rc.Do(req, nil, 5*time.Second)
	require.ErrorContains(t, err, "Transfer-Encoding")
}

func TestProcMinorFaultsOfThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	before, err := ProcMinorFaults(os.Getpid())
	require.NoError(t, err)
	// Fresh pages from the kernel (not the Go heap, which may reuse pages
	// it touched before): each first touch faults.
	b, err := syscall.Mmap(-1, 0, 8<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	require.NoError(t, err)
	defer syscall.Munmap(b)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	after, err := ProcMinorFaults(os.Getpid())
	require.NoError(t, err)
	require.Greater(t, after-before, int64(1000), "8 MB touched page by page")
	_, err = ProcMinorFaults(-1)
	require.Error(t, err)
}
