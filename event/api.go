package event

import "time"

// This file is the contract between the pure core and the actor shell
// (package actors), with effects.go: Machine with Decide (decide.go), Apply
// (apply.go), ApplyRecord and NextDeadline; AppendChange, MarshalChange
// and UnmarshalChange (codec.go); MarshalState, EncodeState, UnmarshalState
// and DecodeState (statecodec.go). Signatures change only together with
// the shell.

// Command is a request to one event's machine. Every command type in
// commands.go implements it. Commands are values built by the HTTP layer
// (decoded from a request body plus path parameters) or by the shell
// (Expire); they carry no I/O handles.
type Command interface {
	// decide is the command's own part of Decide, which has already
	// checked what its registry entry says (registry.go).
	decide(m *Machine, now time.Time) (any, []Change, error)
}

// Op is a command whose result (what Decide returns for it when it
// succeeds) is an R. Each command declares its R with a result method and
// its registry line checks it at compile time, so the shell can hand a
// typed result back to its caller (actors.Ask).
type Op[R any] interface {
	Command
	result(*R)
}

// Change is a state-change record: what Decide emits, what the write-ahead
// log stores and what Apply performs. Every change carries its own timestamp
// (At) so replay never reads a clock.
type Change interface {
	// ChangeKind names the change in the log encoding ("registration.created").
	ChangeKind() string
	// appendBody appends the change's fields in binary (bincodec.go).
	appendBody(e enc) enc
	// apply performs the change on s (see Machine.Apply).
	apply(s *State)
}

// IDs supplies the fresh identifiers and secrets a decision needs (record
// ids, check-in codes, pass tokens, order numbers). The shell passes a
// crypto-random source; tests pass a seeded one, so decisions stay
// deterministic for given inputs. Generated values end up inside the changes,
// so replay never calls IDs.
type IDs interface {
	// New returns a fresh id with the given type prefix, e.g. New("reg_").
	New(prefix string) string
	// Code returns n random characters of Crockford base32 (upper case).
	Code(n int) string
}

// Machine is the pure, deterministic state machine of one event.
// It is not safe for concurrent use: the event actor owns it.
type Machine struct {
	cfg Config
	ids IDs
	s   *State
	dec dec // ApplyRecord's decoder
	// lastTick is the Now of the last Expire decided: the waiting room
	// ticks a queueTick after it (waitingroom.go). Not state: a replay
	// or a new machine ticks at once.
	lastTick time.Time
	// scans are the tables deciding a batch of door scans uses, kept for
	// the next batch (door.go).
	scans *scanTables
}

// Config is the static configuration of a machine. Durations are only used
// to compute deadlines that are then stored in changes, so replay does not
// depend on the configuration in force at replay time.
type Config struct {
	// BaseURL prefixes every URL a view hands out (passUrl, orderUrl,
	// checkoutUrl, paymentUrl, url), e.g. "http://127.0.0.1:8080".
	BaseURL string
	// OrderHold is how long a placed order holds its places (15m).
	OrderHold time.Duration
	// CheckoutSessionTTL is a checkout session's lifetime (24h).
	CheckoutSessionTTL time.Duration
	// CheckoutSessionKeep is how long a checkout session that expired
	// unused still answers as expired before it is purged
	// (checkoutpurge.go); 0 takes the default (24h).
	CheckoutSessionKeep time.Duration
	// OpenOrdersPerClient and OpenSessionsPerClient are the storefront's
	// hold limits per client (holdlimits.go): 0 takes the default (10 and
	// 20), negative turns the limit off.
	OpenOrdersPerClient   int
	OpenSessionsPerClient int
}

// NewMachine returns a machine for event id with empty state.
func NewMachine(id string, cfg Config, ids IDs) *Machine {
	return &Machine{cfg: cfg, ids: ids, s: newState(id)}
}

// State returns the machine's state. Callers must not mutate it.
func (m *Machine) State() *State { return m.s }

// Restore replaces the machine's state, e.g. with a decoded snapshot.
func (m *Machine) Restore(s *State) { m.s = s }

// Reserve announces that about changes more changes will be applied, as
// before a replay (the log's last seq minus the position replayed from).
// It is only a capacity hint, with no effect on the state's content: each
// collection of registrations, orders or check-ins that is still empty when
// its first record arrives is made with room for half the remaining count,
// so a replay of a million changes does not rehash its maps at every
// doubling. Each Apply counts the hint down, so collections first used
// after the replay grow as usual. Values above 1<<22 are clamped, which
// bounds what a wrong count can waste.
func (m *Machine) Reserve(changes int) {
	m.s.mem.reserve = min(max(changes, 0), maxReserve)
}

// Expire is the command the shell's timer sends (and the shell sends once
// after recovery): every hold whose deadline is at or before Now lapses,
// and the waiting room ticks (waitingroom.go).
type Expire struct{ Now time.Time }

// DecideOp is Decide with the command's own result type (for the shell's
// own reads of the machine).
func DecideOp[R any](m *Machine, now time.Time, c Op[R]) (R, []Change, error) {
	res, chs, err := m.Decide(now, c)
	if err != nil {
		var zero R
		return zero, nil, err
	}
	v, ok := res.(R)
	if !ok && res != nil {
		mustNotHappen("%T answered %T", c, res)
	}
	return v, chs, nil
}
