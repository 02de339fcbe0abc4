package event

import (
	"hash/maphash"
	"math/bits"
)

// scanTable is the door index's recorded scans of every device (the
// idempotency of decisions §18, per device and scan id): one
// open-addressed table keyed by a hash of the pair, whose slots hold only
// the hash and the answer's position. The key itself is read from the record the
// ref names (the check-in's or the answer's device and scan id) when a
// hash matches, so a lookup costs one probe of one table and no string
// comparison on a miss, where a map per device hashed into that device's
// table and kept a copy of every key's header (0.3 µs a scan of the
// event's actor in door-sync). It is derived state, rebuilt from the
// check-ins and Door.Answers like the rest of the door index: nothing of
// it is in a snapshot.
type scanTable struct {
	// slots: a power of two long, or none; 0 is empty, else the top 32
	// bits of the pair's hash (lowest bit set) over the ref's code
	// (scanCode). Eight bytes a slot keep the table of every recorded
	// scan a third of what 24-byte slots or a map's string keys take, so
	// that more of it stays in the cache; and the slot's home is the
	// hash's top bits, so doubling moves the slots in order.
	slots []uint64
	shift uint // 64 - log2(len(slots))
	n     int  // slots in use
}

// scanTableMinSlots is the table's first size, in slots.
const scanTableMinSlots = 1024

// scanSeedDev and scanSeedID hash a scan's device and its id apart, so
// that (a, b) and (b, a) do not collide by construction. The table's
// answers never depend on them (a matching hash is checked against the
// record), only its layout.
var scanSeedDev, scanSeedID = maphash.MakeSeed(), maphash.MakeSeed()

// scanDevHash is the part of a scan's hash its device gives: a batch
// computes it once.
func scanDevHash(deviceID string) uint64 { return maphash.String(scanSeedDev, deviceID) }

// scanHash is the hash of (device, scan id), given the device's part.
func scanHash(dev uint64, scanID string) uint64 { return scanIDHash(scanID) ^ dev }

// scanCode is ref in 32 bits: a check-in's position in CheckinOrder
// (even) or an answer's in Door.Answers (odd).
func scanCode(ref scanRef) uint64 {
	if ref.checkin != nil {
		return uint64(ref.checkin.Seq) << 1
	}
	return uint64(ref.answer)<<1 | 1
}

// scanRefOf is the ref a code names.
func (s *State) scanRefOf(code uint32) scanRef {
	if code&1 == 0 {
		return scanRef{checkin: s.checkinAt(int(code >> 1)), answer: -1}
	}
	return scanRef{answer: int32(code >> 1)}
}

// refIs reports whether ref is the scan of deviceID with scanID.
func (s *State) refIs(ref scanRef, deviceID, scanID string) bool {
	if ref.checkin != nil {
		return ref.checkin.ScanID == scanID && ref.checkin.DeviceID == deviceID
	}
	a := &s.Door.Answers[ref.answer]
	return a.ScanID == scanID && a.DeviceID == deviceID
}

// find is the slot of (deviceID, scanID) hashed h, or the empty slot
// where it goes, and whether it is there.
func (t *scanTable) find(s *State, h uint64, deviceID, scanID string) (int, bool) {
	mask := len(t.slots) - 1
	top := h>>32 | 1
	for i := int(h >> t.shift); ; i = (i + 1) & mask {
		e := t.slots[i]
		if e == 0 {
			return i, false
		}
		if e>>32 == top && s.refIs(s.scanRefOf(uint32(e)), deviceID, scanID) {
			return i, true
		}
	}
}

// get is the recorded answer of (deviceID, scanID), dev being
// scanDevHash(deviceID).
func (t *scanTable) get(s *State, dev uint64, deviceID, scanID string) (scanRef, bool) {
	if t.n == 0 {
		return scanRef{}, false
	}
	i, ok := t.find(s, scanHash(dev, scanID), deviceID, scanID)
	if !ok {
		return scanRef{}, false
	}
	return s.scanRefOf(uint32(t.slots[i])), true
}

// recorded fills out, for each scan id hashed ids (scanIDHash), with the
// recorded answer's slot, or -1 when none, and returns it. A batch looks
// its scans up together, before deciding them: the probes of one tight
// loop overlap their cache misses, where one lookup between each scan's
// verdicts waits for its own. The table does not change while a batch is
// decided (Apply records its scans).
func (t *scanTable) recorded(s *State, dev uint64, deviceID string, scans []Scan, ids []uint64, out []int32) []int32 {
	for i := range scans {
		out[i] = -1
		if t.n == 0 {
			continue
		}
		if j, ok := t.find(s, ids[i]^dev, deviceID, scans[i].ScanID); ok {
			out[i] = int32(j)
		}
	}
	return out
}

// at is the ref of a slot recorded gave.
func (t *scanTable) at(s *State, slot int32) scanRef { return s.scanRefOf(uint32(t.slots[slot])) }

// put records ref as the answer of (deviceID, scanID), replacing any
// earlier one (as the map it replaces did). The record ref names must
// already be in the state and hold deviceID and scanID.
func (t *scanTable) put(s *State, dev uint64, deviceID, scanID string, ref scanRef) {
	// At most half full: a miss, the common case, probes about two slots.
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	h := scanHash(dev, scanID)
	i, ok := t.find(s, h, deviceID, scanID)
	if !ok {
		t.n++
	}
	t.slots[i] = (h>>32|1)<<32 | scanCode(ref)
}

// grow doubles the table. A slot's home is its hash's top bits, so the
// old slots, taken in order, land in order in the new table.
func (t *scanTable) grow() {
	n := 2 * len(t.slots)
	if n < scanTableMinSlots {
		n = scanTableMinSlots
	}
	old := t.slots
	t.slots = make([]uint64, n)
	prefault(t.slots)
	t.shift = uint(64 - bits.TrailingZeros(uint(n)))
	mask := n - 1
	for _, e := range old {
		if e == 0 {
			continue
		}
		i := int(e >> t.shift)
		for t.slots[i] != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = e
	}
}
