package api_test

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	gojson "github.com/goccy/go-json"

	"ticketd/app/apptest"
	"ticketd/bench/load"
)

// TestDoorScanProfile is a development tool, not a test: with
// TICKETD_DOOR_PROFILE=<file> it sets up an event of
// TICKETD_DOOR_REGS (default 20,000) registrations and 50 devices on the
// real Main, sends every pass-door (event and venue) in batches of 500
// from the 50 devices at once, 20% of each later round repeats of earlier
// rounds', and writes the CPU profile of that phase alone to <file>,
// printing the scans per second and the process's CPU per scan (the
// in-process client's included; the profile separates them).
func TestDoorScanProfile(t *testing.T) {
	out := os.Getenv("TICKETD_DOOR_PROFILE")
	if out == "" {
		t.Skip("set TICKETD_DOOR_PROFILE=<file> to profile the batched scans")
	}
	nRegs := 20_000
	if v, err := strconv.Atoi(os.Getenv("TICKETD_DOOR_REGS")); err == nil && v > 0 {
		nRegs = v
	}
	s := apptest.Start(t)
	u := s.NewUnit("door profile")
	c, err := load.NewClient(s.URL, 128)
	if err != nil {
		t.Fatal(err)
	}
	e, err := c.CreateEvent(u.Secret, "Door profile", 10_000_000)
	if err != nil {
		t.Fatal(err)
	}
	var venue load.IDOnly
	if err := c.JSON("POST", "/admin/v1/events/"+e.EventID+"/venues", s.Admin, map[string]any{"name": "Hall"}, 201, &venue); err != nil {
		t.Fatal(err)
	}
	ids, err := c.Register(u.Secret, e, "prof", nRegs, 32)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 50)
	for i := range keys {
		var d struct {
			SetupCode string `json:"setupCode"`
		}
		if err := c.JSON("POST", "/v1/events/"+e.EventID+"/devices", u.Secret, map[string]any{"name": "gate " + strconv.Itoa(i)}, 201, &d); err != nil {
			t.Fatal(err)
		}
		var k struct {
			Key string `json:"key"`
		}
		if err := c.JSON("POST", "/door/v1/device/initialize", "", map[string]any{"setupCode": d.SetupCode}, 201, &k); err != nil {
			t.Fatal(err)
		}
		keys[i] = k.Key
	}
	type pd struct{ reg, door string }
	var pairs []pd
	for _, id := range ids {
		pairs = append(pairs, pd{id, ""}, pd{id, venue.ID})
	}
	scanned := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	var bodies [][][]byte
	next, total := 0, 0
	for r := 0; next < len(pairs); r++ {
		round := make([][]byte, len(keys))
		for d := range keys {
			var sb strings.Builder
			sb.WriteString(`{"scans":[`)
			for i := range 500 {
				var p pd
				if r > 0 && i%5 == 0 {
					p = pairs[(i*7919+d*104729)%min(next, r*500*len(keys))]
				} else if next < len(pairs) {
					p, next = pairs[next], next+1
				} else {
					break
				}
				if i > 0 {
					sb.WriteByte(',')
				}
				door := `"subjectType":"event"`
				if p.door != "" {
					door = `"subjectType":"venue","subjectId":"` + p.door + `"`
				}
				fmt.Fprintf(&sb, `{"scanId":"r%d-%d","registrationId":"%s",%s,"scannedAt":"%s","offline":true}`, r, i, p.reg, door, scanned)
				total++
			}
			sb.WriteString(`]}`)
			round[d] = []byte(sb.String())
		}
		bodies = append(bodies, round)
	}
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ru0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	var verdicts [3]int
	var mu sync.Mutex
	for _, round := range bodies {
		var wg sync.WaitGroup
		for d, b := range round {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st, resp, err := c.Do("POST", "/door/v1/scans", keys[d], b)
				if err != nil || st != 200 {
					t.Errorf("scans: %d %v %s", st, err, load.Truncate(resp, 300))
					return
				}
				var res struct {
					Results []struct {
						Verdict string `json:"verdict"`
					} `json:"results"`
				}
				if err := gojson.Unmarshal(resp, &res); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, r := range res.Results {
					switch r.Verdict {
					case "admitted":
						verdicts[0]++
					case "already_checked_in":
						verdicts[1]++
					default:
						verdicts[2]++
					}
				}
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	el := time.Since(t0)
	pprof.StopCPUProfile()
	var ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) * time.Nanosecond
	t.Logf("%d scans in %d rounds: %.0f scans/s, %.1f µs CPU per scan (client included); admitted %d, already %d, refused %d",
		total, len(bodies), float64(total)/el.Seconds(), float64(cpu.Microseconds())/float64(total), verdicts[0], verdicts[1], verdicts[2])
	if verdicts[0] != len(pairs) || verdicts[2] != 0 {
		t.Errorf("want %d admitted, none refused", len(pairs))
	}
}
