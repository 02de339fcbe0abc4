package api_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDoorScansPooledAcrossDevices: devices sending batches at once, whose
// parsed scans go back to a pool after each answer (the fast path), each
// get the verdicts of their own scans in order; and a repeat of every
// batch answers byte for byte what it first answered, so no scan id the
// event keeps shares memory a later batch reused.
func TestDoorScansPooledAcrossDevices(t *testing.T) {
	f := newAPIFx(t)
	x := newDoorFx(t, f)
	const devices, batches, perBatch = 4, 8, 30
	devs := make([]*apiClient, devices)
	devs[0] = x.dev
	for d := 1; d < devices; d++ {
		_, devs[d] = doorDevice(t, f, x.u, x.eventID, nil)
	}
	body := func(d, b int) map[string]any {
		list := make([]any, perBatch)
		for i := range list {
			list[i] = scanOf(fmt.Sprintf("d%d-b%d-s%d-%s", d, b, i, "xxxxxxxxxxxxxxxxxxxxxxx"[:i%23]), x.regs[i%3], nil)
		}
		return map[string]any{"scans": list}
	}
	first := make([][][]byte, devices)
	var wg sync.WaitGroup
	for d := range devices {
		first[d] = make([][]byte, batches)
		wg.Go(func() {
			for b := range batches {
				r := devs[d].Do("POST", "/door/v1/scans", body(d, b))
				if r.Status != 200 {
					t.Errorf("device %d batch %d: %d %s", d, b, r.Status, r.Body)
					return
				}
				first[d][b] = r.Body
			}
		})
	}
	wg.Wait()
	admitted := 0
	for d := range devices {
		for b := range batches {
			m := apiWant(t, &apiResp{Status: 200, Body: first[d][b]}, 200)
			res := m["results"].([]any)
			require.Len(t, res, perBatch)
			sent := body(d, b)["scans"].([]any)
			for i, r := range res {
				r := r.(map[string]any)
				require.Equal(t, sent[i].(map[string]any)["scanId"], r["scanId"], "device %d batch %d scan %d", d, b, i)
				switch i % 3 {
				case 2:
					require.Equal(t, "refused", r["verdict"])
				default:
					if r["verdict"] == "admitted" {
						admitted++
					} else {
						require.Equal(t, "already_checked_in", r["verdict"])
					}
				}
			}
		}
	}
	require.Equal(t, 2, admitted, "each confirmed pass admitted once at the event door")
	for d := range devices {
		for b := range batches {
			r := devs[d].Do("POST", "/door/v1/scans", body(d, b))
			require.Equal(t, 200, r.Status)
			require.Equal(t, string(first[d][b]), string(r.Body), "device %d batch %d repeated", d, b)
		}
	}
}
