package bench

import (
	"ticketd/bench/load"

	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func sampleReport() *Report {
	r := newReport(&Config{Levels: []float64{0.5, 1}})
	r.CeilingRPS = 30000
	r.add(load.Result{Name: "ceiling", Mode: "closed", RPS: 30000, P50: 1, P99: 5, P999: 9, Max: 12, Status: map[int]int64{201: 90000}})
	r.add(load.Result{Name: "flash-sale", Mode: "closed", RPS: 12000, P50: 4, P99: 20, P999: 40, Max: 50, Status: map[int]int64{201: 36000}})
	r.add(load.Result{Name: "flash-sale@50%", Mode: "open", TargetRPS: 6000, RPS: 6000, P50: 1.5, P99: 6, P999: 9, Max: 10})
	r.add(load.Result{Name: "checkin-burst@50%", Mode: "open", TargetRPS: 5000, RPS: 5000, P50: 0.8, P99: 3, P999: 8, Max: 10})
	r.check("flash-sale", "no oversell", true, "capacity %d", 10)
	return r
}

func TestReportFiles(t *testing.T) {
	r := sampleReport()
	require.InDelta(t, 0.4, r.Runs[1].CeilingRatio, 1e-9)
	dir := t.TempDir()
	path, err := r.Write(dir)
	require.NoError(t, err)
	md, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(md), "| flash-sale | closed |")
	require.Contains(t, string(md), "GOMAXPROCS")
	latest, err := os.ReadFile(filepath.Join(dir, "latest.md"))
	require.NoError(t, err)
	require.Contains(t, string(latest), "](latest.png)")

	js, err := os.ReadFile(strings.TrimSuffix(path, ".md") + ".json")
	require.NoError(t, err)
	var back Report
	require.NoError(t, json.Unmarshal(js, &back))
	require.Equal(t, r.Runs, back.Runs)
	require.Equal(t, r.GoVersion, back.GoVersion)

	raw, err := os.ReadFile(filepath.Join(dir, "latest.png"))
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(raw))
	require.NoError(t, err)
	require.Equal(t, 1040, img.Bounds().Dx())
	// The p99 line's red appears somewhere in the flash-sale panel.
	red := 0
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := 0; x < 520; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if r>>8 == 210 && g>>8 == 40 && b>>8 == 40 {
				red++
			}
		}
	}
	require.Greater(t, red, 50)
	if os.Getenv("BENCH_CHART_OUT") != "" {
		require.NoError(t, os.WriteFile(os.Getenv("BENCH_CHART_OUT"), raw, 0o644))
	}
}

func TestParseMetrics(t *testing.T) {
	m := load.ParseMetrics([]byte(`# HELP x y
# TYPE ticketd_wal_syncs_total counter
ticketd_wal_syncs_total 12
ticketd_http_requests_total{code="201",method="POST",operation="placeStorefrontOrder"} 7
ticketd_http_requests_total{code="412",method="POST",operation="placeStorefrontOrder"} 3
go_gc_heap_live_bytes 1.5e+06
`))
	require.Equal(t, 12.0, m.Sum("ticketd_wal_syncs_total"))
	require.Equal(t, 10.0, m.Sum("ticketd_http_requests_total"))
	require.Equal(t, 3.0, m.Sum("ticketd_http_requests_total", `code="412"`))
	require.Equal(t, 1.5e6, m.Sum("go_gc_heap_live_bytes"))
	d := load.DurabilityBetween(load.Metrics{"ticketd_wal_records_total": 10, "ticketd_wal_syncs_total": 2, "ticketd_wal_commits_total": 2},
		load.Metrics{"ticketd_wal_records_total": 110, "ticketd_wal_syncs_total": 7, "ticketd_wal_commits_total": 6}, 2)
	require.Equal(t, 20.0, d.RecordsPerSync)
	require.Equal(t, 25.0, d.RecordsPerCommit)
	require.Equal(t, 2.5, d.SyncsPerSecond)
}
