package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ticketd/app/apptest"
)

// binary is the ticketd binary built once for the process-level tests.
var binary string

func TestMain(m *testing.M) { apptest.RunWithBinary(m, &binary) }

// proc is a real ticketd process on a loopback port.
type proc struct {
	t           *testing.T
	cmd         *exec.Cmd
	base        string
	dataDir     string
	secret      string
	publishable string
	stdout      *bytes.Buffer
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

var (
	secretRE      = regexp.MustCompile(`secret key:\s+(sk_\S+)`)
	publishableRE = regexp.MustCompile(`publishable key:\s+(pk_\S+)`)
)

// start runs `ticketd serve` on dataDir and waits for its banner.
func start(t *testing.T, dataDir string, extra ...string) *proc {
	addr := freePort(t)
	args := append([]string{"serve", "-addr", addr, "-data-dir", dataDir, "-rate-limit-per-minute", "0",
		"-storefront-key-limit-per-minute", "0", "-storefront-ip-limit-per-minute", "0",
		// The bursts come from one loopback address.
		"-storefront-open-orders-per-ip", "0", "-log-level", "error"}, extra...)
	cmd := exec.Command(binary, args...)
	p := &proc{t: t, cmd: cmd, base: "http://" + addr, dataDir: dataDir, stdout: &bytes.Buffer{}}
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			p.stdout.WriteString(line + "\n")
			if m := secretRE.FindStringSubmatch(line); m != nil {
				p.secret = m[1]
			}
			if m := publishableRE.FindStringSubmatch(line); m != nil {
				p.publishable = m[1]
			}
			if strings.HasPrefix(line, "ticketd listening on ") {
				select {
				case <-ready:
				default:
					close(ready)
				}
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("ticketd did not start; output:\n%s", p.stdout)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	return p
}

// kill9 kills the process without any chance to flush.
func (p *proc) kill9() {
	require.NoError(p.t, p.cmd.Process.Signal(syscall.SIGKILL))
	_, _ = p.cmd.Process.Wait()
}

var client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

func (p *proc) call(key, method, path string, body any) (int, map[string]any) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(p.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, p.base+path, rd)
	require.NoError(p.t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := client.Do(req)
	require.NoError(p.t, err)
	defer resp.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

// TestKill9KeepsEveryAcknowledgedRegistration: a burst of concurrent
// registrations for 50 places, SIGKILL right after the last answer,
// restart: every acknowledged registration is there, nothing over capacity.
func TestKill9KeepsEveryAcknowledgedRegistration(t *testing.T) {
	dataDir := t.TempDir()
	p := start(t, dataDir)
	require.NotEmpty(t, p.secret)
	sk := p.secret

	evt, typeID := p.drop(false, map[string]any{"name": "GA", "capacity": 50})

	const buyers = 300
	acked, soldOut := p.burst(buyers, "id", func(i int) (int, map[string]any) {
		return p.call(sk, "POST", "/v1/events/"+evt+"/registrations",
			map[string]any{"email": fmt.Sprintf("buyer%d@example.com", i), "registrationTypeId": typeID})
	})
	p.kill9()
	assert.Len(t, acked, 50)
	assert.Equal(t, buyers-50, soldOut)

	p2 := start(t, dataDir)
	st, list := p2.call(sk, "GET", "/v1/events/"+evt+"/registrations?limit=100", nil)
	require.Equal(t, 200, st, list)
	data := list["data"].([]any)
	assert.Len(t, data, 50, "nothing over capacity")
	for _, d := range data {
		r := d.(map[string]any)
		assert.True(t, acked[r["id"].(string)], "unacknowledged registration %s", r["id"])
		delete(acked, r["id"].(string))
	}
	assert.Empty(t, acked, "every acknowledged registration survived kill -9")
	st, av := p2.call(sk, "GET", "/v1/events/"+evt+"/ticket-types/"+typeID+"/availability", nil)
	require.Equal(t, 200, st)
	assert.EqualValues(t, 50, av["confirmed"])
	assert.EqualValues(t, 0, av["remaining"])
}

// TestGracefulShutdownOnSIGTERM: SIGTERM drains and exits 0, and the data
// is there on the next start (which prints no new bootstrap keys).
func TestGracefulShutdownOnSIGTERM(t *testing.T) {
	dataDir := t.TempDir()
	p := start(t, dataDir)
	st, ev := p.call(p.secret, "POST", "/v1/events", map[string]any{"name": "Calm", "timezone": "UTC"})
	require.Equal(t, 201, st)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	state, err := p.cmd.Process.Wait()
	require.NoError(t, err)
	assert.Equal(t, 0, state.ExitCode())

	p2 := start(t, dataDir)
	assert.Empty(t, p2.secret, "bootstrap keys are printed once, on the first start")
	st, got := p2.call(p.secret, "GET", "/v1/events/"+ev["id"].(string), nil)
	assert.Equal(t, 200, st)
	assert.Equal(t, "Calm", got["name"])
}

// TestKill9KeepsEveryAcknowledgedHold: 300 concurrent storefront order
// placements for 50 places give exactly 50 holds and 250 sold-out answers;
// after SIGKILL and a restart the 50 orders still hold their places and the
// next buyer is still sold out.
func TestKill9KeepsEveryAcknowledgedHold(t *testing.T) {
	dataDir := t.TempDir()
	p := start(t, dataDir)
	sk, pk := p.secret, p.publishable
	require.NotEmpty(t, pk)

	evt, typeID := p.drop(true, map[string]any{"name": "GA", "capacity": 50, "priceAmount": 25})

	const buyers = 300
	held, soldOut := p.burst(buyers, "orderNumber", func(i int) (int, map[string]any) {
		st, o := p.call(pk, "POST", "/storefront/v1/events/"+evt+"/orders", map[string]any{
			"email": fmt.Sprintf("fan%d@example.com", i),
			"items": []map[string]any{{"itemType": "registration_type", "itemId": typeID, "quantity": 1}},
		})
		if st == 201 {
			assert.Equal(t, "open", o["status"])
		}
		return st, o
	})
	require.Len(t, held, 50, "exactly 50 holds")
	assert.Equal(t, buyers-50, soldOut, "and 250 sold-out answers")
	p.kill9()

	p2 := start(t, dataDir)
	st, av := p2.call(sk, "GET", "/v1/events/"+evt+"/ticket-types/"+typeID+"/availability", nil)
	require.Equal(t, 200, st)
	assert.EqualValues(t, 50, av["held"], "every acknowledged hold survived kill -9")
	assert.EqualValues(t, 0, av["remaining"])
	for number := range held {
		st, o := p2.call(sk, "GET", "/v1/events/"+evt+"/orders/"+number, nil)
		require.Equal(t, 200, st, number)
		assert.Equal(t, "open", o["status"])
	}
	st, _ = p2.call(pk, "POST", "/storefront/v1/events/"+evt+"/orders", map[string]any{
		"email": "late@example.com", "items": []map[string]any{{"itemType": "registration_type", "itemId": typeID, "quantity": 1}},
	})
	assert.Equal(t, 412, st, "still sold out after the restart")
}

// drop creates an event (published when asked) with one open ticket type
// of the given body, and returns their ids.
func (p *proc) drop(published bool, ticketType map[string]any) (string, string) {
	t, sk := p.t, p.secret
	st, ev := p.call(sk, "POST", "/v1/events", map[string]any{"name": "Drop", "timezone": "UTC", "startsAt": "2030-01-01T10:00:00Z"})
	require.Equal(t, 201, st, ev)
	evt := ev["id"].(string)
	if published {
		st, _ = p.call(sk, "PATCH", "/v1/events/"+evt, map[string]any{"status": "published"})
		require.Equal(t, 200, st)
	}
	st, tt := p.call(sk, "POST", "/v1/events/"+evt+"/ticket-types", ticketType)
	require.Equal(t, 201, st, tt)
	typeID := tt["id"].(string)
	st, _ = p.call(sk, "PATCH", "/v1/events/"+evt+"/ticket-types/"+typeID, map[string]any{"status": "open"})
	require.Equal(t, 200, st)
	return evt, typeID
}

// burst runs n concurrent calls and sorts the answers: 201 records the
// answer's key field as acknowledged, 412 counts as sold out, anything else
// fails the test.
func (p *proc) burst(n int, key string, call func(i int) (int, map[string]any)) (acked map[string]bool, soldOut int) {
	acked = map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			st, r := call(i)
			mu.Lock()
			defer mu.Unlock()
			switch st {
			case 201:
				acked[r[key].(string)] = true
			case 412:
				soldOut++
			default:
				p.t.Errorf("call %d: %d %v", i, st, r)
			}
		}(i)
	}
	wg.Wait()
	return acked, soldOut
}
