package bench

import (
	"errors"
	"io"
	"time"
)

// Config holds every knob of a run. Quick and Full return the two presets;
// the loadgen flags override single fields.
type Config struct {
	Quick bool
	// TicketdBin is the service binary; SelfBin is the loadgen binary,
	// re-executed for the ceiling and the fsync-off server.
	TicketdBin, SelfBin string
	// TicketdRole, when set, starts TicketdBin as that child role (see
	// RoleService) instead of `ticketd serve`: go test uses its own binary.
	TicketdRole string
	WorkDir     string // data dirs and logs; removed by the caller
	ResultsDir  string // "" writes no files
	Only        map[string]bool

	// Conns is the connections (buyers in flight) of every run against the
	// service and the ceiling. A durable hold waits for an fsync, so it
	// takes more requests in flight than the ceiling needs to keep both
	// cores busy: at 128 the service idled about 15% of a flash sale
	// (top), and its closed-loop maximum was 20-25% below the one at 512,
	// while the ceiling's was the same at both. The full preset uses 512,
	// and the flash sale is also run at RefConns for comparison.
	Conns        int
	RefConns     int           // a second closed-loop flash sale at this many connections; 0: none
	Duration     time.Duration // each closed-loop run
	OpenDuration time.Duration // each open-loop run
	Levels       []float64     // open-loop rates as fractions of the closed-loop maximum

	SoldOutCapacity int     // flash sale far below the buyers
	CheckinPool     int     // registrations created before the check-in burst
	DuplicateShare  float64 // share of check-in scans that repeat an earlier scan
	// DoorRegs, DoorScans and DoorDevices size the door-sync scenario:
	// confirmed registrations, offline scans (DuplicateShare of them
	// repeats across devices) and devices.
	DoorRegs, DoorScans, DoorDevices int
	// QueueBuyers join the queue-drop's waiting room before onSaleAt,
	// against QueuePlaces places.
	QueueBuyers, QueuePlaces int
	MixRate                  float64 // integrator requests per second (open loop)
	MixConns                 int

	RecoveryChanges int // changes in the recovered event's log, at least
	// RecoveryRegistrations is the recovered event's registrations, at
	// least (the target is stated for an event of a million).
	RecoveryRegistrations int
	ScaleEvents           int // events of the scale scenario
	ScaleRegs             int // registrations per event
	// ScaleActive is how many events are active at once when the heap per
	// registration is measured: every active actor preallocates its bounded
	// mailbox, so all ten thousand at once would not fit in memory.
	ScaleActive int
	ScaleIdle   time.Duration // the service's idle timeout in the scale run

	Log io.Writer
}

// Scenarios are the scenario names, in run order.
var Scenarios = []string{"ceiling", "flash-sale", "paid-flash-sale", "console-dashboards", "feed-follow", "sold-out", "queue-drop", "checkin-burst", "door-sync", "integrator-mix", "kill9", "nosync", "profile", "recovery", "scale"}

// QuickConfig is the smoke preset: small numbers, short runs (every
// scenario: about three minutes on two cores).
func QuickConfig() Config {
	return Config{
		Quick: true, Conns: 64, Duration: 3 * time.Second, OpenDuration: 2 * time.Second,
		Levels: []float64{0.25, 0.5, 0.75, 1}, SoldOutCapacity: 100, CheckinPool: 6000,
		DoorRegs: 20_000, DoorScans: 40_000, DoorDevices: 50, QueueBuyers: 10_000, QueuePlaces: 100,
		DuplicateShare: 0.2, MixRate: 100, MixConns: 16, RecoveryChanges: 100_000, RecoveryRegistrations: 20_000,
		ScaleEvents: 300, ScaleRegs: 50, ScaleActive: 100, ScaleIdle: 8 * time.Second,
	}
}

// FullConfig is the preset of `make bench`: the full sizes, bounded
// to about ten minutes on two cores.
func FullConfig() Config {
	return Config{
		Conns: 512, RefConns: 128, Duration: 10 * time.Second, OpenDuration: 8 * time.Second,
		Levels: []float64{0.25, 0.5, 0.75, 1}, SoldOutCapacity: 1000, CheckinPool: 150_000,
		DoorRegs: 100_000, DoorScans: 200_000, DoorDevices: 50, QueueBuyers: 100_000, QueuePlaces: 1000,
		DuplicateShare: 0.2, MixRate: 200, MixConns: 32, RecoveryChanges: 1_000_000, RecoveryRegistrations: 1_000_000,
		ScaleEvents: 10_000, ScaleRegs: 100, ScaleActive: 300, ScaleIdle: 20 * time.Second,
	}
}

// Validate checks the knobs.
func (c *Config) Validate() error {
	switch {
	case c.TicketdBin == "" || c.SelfBin == "" || c.WorkDir == "":
		return errors.New("bench: config: binaries and work dir are required")
	case c.Conns < 1 || c.MixConns < 1:
		return errors.New("bench: config: connections must be positive")
	case c.Duration <= 0 || c.OpenDuration <= 0:
		return errors.New("bench: config: durations must be positive")
	case c.DuplicateShare < 0 || c.DuplicateShare >= 1:
		return errors.New("bench: config: duplicate share must be in [0, 1)")
	case c.SoldOutCapacity < 1 || c.CheckinPool < 1 || c.RecoveryChanges < 1 || c.ScaleEvents < 1 || c.ScaleRegs < 1 || c.ScaleActive < 1 ||
		c.QueueBuyers < 1 || c.QueuePlaces < 1 || c.QueuePlaces > c.QueueBuyers:
		return errors.New("bench: config: sizes must be positive")
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	return nil
}

func (c *Config) enabled(name string) bool { return len(c.Only) == 0 || c.Only[name] }
