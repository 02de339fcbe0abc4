package load

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Metrics is one scrape of /metrics: series (name with its labels, as
// printed) to value.
type Metrics map[string]float64

// Client returns a client of the server with at most conns connections,
// holding its admin token for Scrape.
func (s *Server) Client(conns int) (*Client, error) {
	c, err := NewClient(s.URL, conns)
	if err == nil {
		c.AdminToken = s.AdminToken
	}
	return c, err
}

// Scrape reads /metrics with the admin token. ok is false
// when the server does not serve it.
func (c *Client) Scrape() (m Metrics, ok bool, err error) {
	st, body, err := c.Do("GET", "/metrics", c.AdminToken, nil)
	if err != nil {
		return nil, false, err
	}
	if st == 404 {
		return nil, false, nil
	}
	if st != 200 {
		return nil, false, fmt.Errorf("bench: scrape: status %d", st)
	}
	return ParseMetrics(body), true, nil
}

// ParseMetrics parses the Prometheus text format loosely: comments are
// skipped, every sample line becomes one entry.
func ParseMetrics(b []byte) Metrics {
	m := Metrics{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if l == "" || l[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		if i <= 0 {
			continue
		}
		v, err := strconv.ParseFloat(l[i+1:], 64)
		if err != nil {
			continue
		}
		m[l[:i]] = v
	}
	return m
}

// Sum adds every series of the family name whose labels contain all of
// the label="value" pairs given.
func (m Metrics) Sum(name string, labels ...string) float64 {
	var s float64
	for k, v := range m {
		if k != name && !strings.HasPrefix(k, name+"{") {
			continue
		}
		match := true
		for _, l := range labels {
			if !strings.Contains(k, l) {
				match = false
				break
			}
		}
		if match {
			s += v
		}
	}
	return s
}

// Durability is the group-commit picture of a time window, from two
// scrapes.
type Durability struct {
	Commits          float64 `json:"commits"`
	Records          float64 `json:"records"`
	Syncs            float64 `json:"syncs"`
	RecordsPerSync   float64 `json:"recordsPerSync"`
	RecordsPerCommit float64 `json:"recordsPerCommit"`
	SyncsPerSecond   float64 `json:"syncsPerSecond"`
	// SyncBusy is the share of the wall time spent in WAL fsyncs: near 1
	// the syncs ran back to back and the disk paced the durable writes.
	SyncBusy float64 `json:"syncBusy"`
	// SyncMs is the mean fsync duration.
	SyncMs float64 `json:"syncMs"`
}

// DurabilityBetween is the difference of two scrapes over seconds.
func DurabilityBetween(a, b Metrics, seconds float64) Durability {
	d := Durability{
		Commits: b.Sum("ticketd_wal_commits_total") - a.Sum("ticketd_wal_commits_total"),
		Records: b.Sum("ticketd_wal_records_total") - a.Sum("ticketd_wal_records_total"),
		Syncs:   b.Sum("ticketd_wal_syncs_total") - a.Sum("ticketd_wal_syncs_total"),
	}
	busy := b.Sum("ticketd_wal_sync_seconds_total") - a.Sum("ticketd_wal_sync_seconds_total")
	if d.Syncs > 0 {
		d.RecordsPerSync = d.Records / d.Syncs
		d.SyncMs = busy * 1000 / d.Syncs
	}
	if d.Commits > 0 {
		d.RecordsPerCommit = d.Records / d.Commits
	}
	if seconds > 0 {
		d.SyncsPerSecond = d.Syncs / seconds
		d.SyncBusy = busy / seconds
	}
	return d
}
