package event

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	json "github.com/goccy/go-json"
)

// Snapshot byte format (MarshalState), version 2:
//
//	byte 0      version (2)
//	string      the event id
//	record      the event (a flag byte 0 when there is none yet)
//	sections    ticket types, registrations, check-ins, codes, add-ons,
//	            bundles, orders, checkout sessions, sessions (in agenda
//	            order), venues, perks, speakers, sponsors: each a uvarint
//	            count, then the records in creation order
//	bindings    perks of ticket types, of codes, grants (program_views.go)
//	content     the organizer's content (content.go)
//	door        the pass counter, scan answers and conflicts (door.go)
//	feed        the change feed's last seq, a uvarint (feed.go)
//
// A record is a uvarint length and its fields in the field encodings of
// bincodec.go; Seq is the record's position and is not stored. Fields are
// only appended to a record and sections only appended to the end: a
// record or snapshot that ends early decodes the rest as zero values, so
// snapshots of an older build stay readable. Version 1 (the State as JSON)
// is still decoded.
const stateVersion = 2

// MarshalState encodes the whole state for a snapshot.
func MarshalState(s *State) ([]byte, error) { return EncodeState(s, nil) }

// EncodeState is MarshalState with a yield hook: when yield is not nil it
// is called every paceEvery records (see pace), so a caller encoding in
// the background can let other goroutines run.
func EncodeState(s *State, yield func()) ([]byte, error) {
	p := &pace{yield: yield}
	// Sized from samples of the big sections: growing a buffer of a few
	// hundred megabytes by appending copies it several times over.
	size := 4096 +
		estimate(len(s.RegOrder), s.regAt, enc.regRec) +
		estimate(len(s.CheckinOrder), s.checkinAt, enc.checkinRec) +
		estimate(len(s.OrderOrder), s.orderAt, enc.orderRec) +
		estimate(len(s.CheckoutOrder), byID(s.CheckoutOrder, s.Checkouts), enc.checkoutRec) +
		estimate(len(s.CodeOrder), byID(s.CodeOrder, s.Codes), enc.codeRec)
	e := make(enc, 0, size)
	e = append(e, stateVersion)
	e = e.str(s.ID)
	if s.Event == nil {
		e = append(e, 0)
	} else {
		e = append(e, 1)
		e = record(e, func(e enc) enc { return e.eventRec(s.Event) })
	}
	e = section(e, p, len(s.TypeOrder), byID(s.TypeOrder, s.Types), enc.typeRec)
	e = section(e, p, len(s.RegOrder), s.regAt, enc.regRec)
	e = section(e, p, len(s.CheckinOrder), s.checkinAt, enc.checkinRec)
	e = section(e, p, len(s.CodeOrder), byID(s.CodeOrder, s.Codes), enc.codeRec)
	e = section(e, p, len(s.AddonOrder), byID(s.AddonOrder, s.Addons), enc.addonRec)
	e = section(e, p, len(s.BundleOrder), byID(s.BundleOrder, s.Bundles), enc.bundleRec)
	e = section(e, p, len(s.OrderOrder), s.orderAt, enc.orderRec)
	e = section(e, p, len(s.CheckoutOrder), byID(s.CheckoutOrder, s.Checkouts), enc.checkoutRec)
	e = section(e, p, len(s.SessionOrder), byID(s.SessionOrder, s.Sessions), enc.sessionRec)
	e = section(e, p, len(s.VenueOrder), byID(s.VenueOrder, s.Venues), enc.venueRec)
	e = s.appendProgram(e)
	e = s.appendContent(e)
	e = s.appendDoor(e)
	// The change feed's position (feed.go): a uvarint after the organizer content,
	// so an older snapshot, which ends before it, decodes 0.
	e = binary.AppendUvarint(e, s.FeedSeq)
	e = s.appendRoom(e)
	return e, nil
}

// record appends a length-prefixed record. The body is encoded in place
// after two reserved length bytes, which fit most records (128 to 16383
// bytes); a shorter or longer one is moved to make the length minimal.
func record(e enc, body func(enc) enc) enc {
	start := len(e)
	e = append(e, 0, 0)
	e = body(e)
	n := len(e) - start - 2
	switch {
	case n < 1<<7:
		e[start] = byte(n)
		copy(e[start+1:], e[start+2:])
		return e[:len(e)-1]
	case n < 1<<14:
		e[start], e[start+1] = byte(n)|0x80, byte(n>>7)
		return e
	}
	var lb [10]byte
	l := len(enc(lb[:0]).uvarintBytes(uint64(n)))
	for range l - 2 {
		e = append(e, 0)
	}
	copy(e[start+l:], e[start+2:start+2+n])
	copy(e[start:], enc(lb[:0]).uvarintBytes(uint64(n)))
	return e
}

func (e enc) uvarintBytes(v uint64) enc {
	for v >= 0x80 {
		e = append(e, byte(v)|0x80)
		v >>= 7
	}
	return append(e, byte(v))
}

// estimate returns about the encoded size of a section of n records (at
// returns record i), from up to 16 records spread over it, with 1/8 of
// slack.
func estimate[T any](n int, at func(int) *T, body func(enc, *T) enc) int {
	if n == 0 {
		return 0
	}
	var buf [512]byte
	k := min(n, 16)
	total := 0
	for j := range k {
		total += len(body(enc(buf[:0]), at(j*n/k))) + 3 // length prefix
	}
	per := total / k
	return n*per + n*per/8 + 16
}

// section appends a count and n records; at returns record i.
func section[T any](e enc, p *pace, n int, at func(int) *T, body func(enc, *T) enc) enc {
	e = e.uvarintBytes(uint64(n))
	for i := range n {
		p.tick()
		r := at(i)
		e = record(e, func(e enc) enc { return body(e, r) })
	}
	return e
}

// byID returns the records of a small collection by position.
func byID[T any](order []string, m map[string]*T) func(int) *T {
	return func(i int) *T { return m[order[i]] }
}

func (e enc) eventRec(r *EventRec) enc {
	return e.str(r.Name).str(r.Timezone).timep(r.StartsAt).timep(r.EndsAt).str(r.Status).str(r.Currency).
		time(r.CreatedAt).time(r.UpdatedAt).int(int64(r.OrdersTaken)).str(r.SiteURL).int(int64(r.WaitTicks)).
		refundPolicy(r.Refund).str(r.Venue).str(r.Address).str(r.OnlineURL)
}

func (d *dec) eventRec() EventRec {
	r := EventRec{Name: d.str(), Timezone: d.str(), StartsAt: d.timep(), EndsAt: d.timep(), Status: d.str(), Currency: d.str(),
		CreatedAt: d.time(), UpdatedAt: d.time(), OrdersTaken: int(d.int()), SiteURL: d.str(), WaitTicks: int(d.int())}
	r.Refund = d.refundPolicy()
	r.Venue, r.Address, r.OnlineURL = d.str(), d.str(), d.str()
	return r
}

func (e enc) typeRec(r *TicketTypeRec) enc {
	return e.str(r.ID).typeSpec(r.TicketTypeSpec).time(r.CreatedAt).time(r.UpdatedAt).
		int(int64(r.Confirmed)).int(int64(r.Waitlisted)).int(int64(r.Held))
}

func (d *dec) typeRec() TicketTypeRec {
	return TicketTypeRec{ID: d.str(), TicketTypeSpec: d.typeSpec(), CreatedAt: d.time(), UpdatedAt: d.time(),
		Confirmed: int(d.int()), Waitlisted: int(d.int()), Held: int(d.int())}
}

func (e enc) regRec(r *RegistrationRec) enc {
	return e.str(r.ID).str(r.Email).str(r.Name).str(r.TypeID).str(r.Status).str(r.Reason).str(r.CheckinCode).
		str(r.PassToken).str(r.CodeID).str(r.OrderID).time(r.CreatedAt).time(r.UpdatedAt).int(int64(r.WaitSeq)).
		int(r.PassVer)
}

func (d *dec) regRec() RegistrationRec {
	return RegistrationRec{ID: d.str(), Email: d.str(), Name: d.str(), TypeID: d.str(), Status: d.str(), Reason: d.str(),
		CheckinCode: d.str(), PassToken: d.str(), CodeID: d.str(), OrderID: d.str(), CreatedAt: d.time(), UpdatedAt: d.time(),
		WaitSeq: int(d.int()), PassVer: d.int()}
}

func (e enc) checkinRec(r *CheckinRec) enc {
	return e.str(r.ID).str(r.RegID).str(r.SubjectType).str(r.SubjectID).str(r.Method).time(r.At).
		str(r.DeviceID).str(r.ScanID)
}

func (d *dec) checkinRec() CheckinRec {
	return CheckinRec{ID: d.str(), RegID: d.str(), SubjectType: d.str(), SubjectID: d.str(), Method: d.str(), At: d.time(),
		DeviceID: d.str(), ScanID: d.str()}
}

func (e enc) codeRec(r *CodeRec) enc {
	return e.str(r.ID).str(r.TypeID).str(r.Code).str(r.Label).intp(r.MaxUses).int(int64(r.Uses)).int(int64(r.Held)).
		timep(r.ExpiresAt).bool(r.Disabled).time(r.CreatedAt)
}

func (d *dec) codeRec() CodeRec {
	return CodeRec{ID: d.str(), TypeID: d.str(), Code: d.str(), Label: d.str(), MaxUses: d.intp(), Uses: int(d.int()),
		Held: int(d.int()), ExpiresAt: d.timep(), Disabled: d.bool(), CreatedAt: d.time()}
}

func (e enc) addonRec(r *AddonRec) enc {
	return e.str(r.ID).addonSpec(r.AddonSpec).time(r.CreatedAt).time(r.UpdatedAt).int(int64(r.Sold)).int(int64(r.Held))
}

func (d *dec) addonRec() AddonRec {
	return AddonRec{ID: d.str(), AddonSpec: d.addonSpec(), CreatedAt: d.time(), UpdatedAt: d.time(), Sold: int(d.int()), Held: int(d.int())}
}

func (e enc) bundleRec(r *BundleRec) enc {
	return e.str(r.ID).bundleSpec(r.BundleSpec).time(r.CreatedAt).time(r.UpdatedAt).int(int64(r.Sold)).int(int64(r.Held))
}

func (d *dec) bundleRec() BundleRec {
	return BundleRec{ID: d.str(), BundleSpec: d.bundleSpec(), CreatedAt: d.time(), UpdatedAt: d.time(), Sold: int(d.int()), Held: int(d.int())}
}

func (e enc) orderRec(r *OrderRec) enc {
	e = e.str(r.ID).str(r.Number).str(r.Email).str(r.Name)
	e = e.uvarintBytes(uint64(len(r.Lines)))
	for _, l := range r.Lines {
		e = e.str(l.ItemType).str(l.ItemID).str(l.Name).int(int64(l.Quantity)).int(int64(l.UnitPrice)).int(int64(l.Amount))
	}
	e = e.uvarintBytes(uint64(len(r.Holds)))
	for _, h := range r.Holds {
		e = e.str(h.Kind).str(h.ID).int(int64(h.Qty))
	}
	return e.str(r.AdmissionTypeID).str(r.CodeID).bool(r.CodeHeld).bytes(r.Responses).str(r.Status).int(int64(r.Total)).
		str(r.Currency).time(r.HoldUntil).str(r.PaymentID).str(r.SuccessURL).str(r.CancelURL).bool(r.AlreadyRegistered).
		str(r.RegistrationID).time(r.CreatedAt).time(r.UpdatedAt).str(r.CheckoutSessionID).refunds(r.Refunds).
		str(r.PromoID).int(int64(r.Discount)).
		str(r.Provider).str(r.ProviderRef).str(r.ProviderURL).strs(refundRefs(r.Refunds)).str(r.Client).
		time(r.PreparedAt).time(r.PreparedHold)
}

func (d *dec) orderRec() OrderRec {
	r := OrderRec{ID: d.str(), Number: d.str(), Email: d.str(), Name: d.str()}
	if n := d.count(); n > 0 {
		r.Lines = make([]OrderLine, n)
		for i := range r.Lines {
			r.Lines[i] = OrderLine{ItemType: d.str(), ItemID: d.str(), Name: d.str(), Quantity: int(d.int()), UnitPrice: Money(d.int()), Amount: Money(d.int())}
		}
	}
	if n := d.count(); n > 0 {
		r.Holds = make([]Hold, n)
		for i := range r.Holds {
			r.Holds[i] = Hold{Kind: d.str(), ID: d.str(), Qty: int(d.int())}
		}
	}
	r.AdmissionTypeID, r.CodeID, r.CodeHeld, r.Responses, r.Status = d.str(), d.str(), d.bool(), d.bytes(), d.str()
	r.Total, r.Currency, r.HoldUntil, r.PaymentID, r.SuccessURL = Money(d.int()), d.str(), d.time(), d.str(), d.str()
	r.CancelURL, r.AlreadyRegistered, r.RegistrationID, r.CreatedAt, r.UpdatedAt = d.str(), d.bool(), d.str(), d.time(), d.time()
	r.CheckoutSessionID = d.str()
	r.Refunds = d.refunds()
	if len(d.s) > 0 {
		r.PromoID, r.Discount = d.str(), Money(d.int())
	}
	if len(d.s) > 0 {
		r.Provider, r.ProviderRef, r.ProviderURL = d.str(), d.str(), d.str()
		setRefundRefs(r.Refunds, d.strs())
	}
	if len(d.s) > 0 {
		r.Client = d.str()
	}
	if len(d.s) > 0 {
		r.PreparedAt, r.PreparedHold = d.time(), d.time() // orders of a build before kept prepares end here
	}
	return r
}

func (e enc) checkoutRec(r *CheckoutRec) enc {
	return e.str(r.ID).orderItems(r.Items).str(r.Email).str(r.Name).bytes(r.Responses).str(r.RedemptionCode).
		str(r.PromotionCode).str(r.ReturnURL).str(r.Locale).time(r.CreatedAt).time(r.ExpiresAt).str(r.OrderID).str(r.Client).str(r.QueueToken)
}

func (d *dec) checkoutRec() CheckoutRec {
	r := CheckoutRec{ID: d.str(), Items: d.orderItems(), Email: d.str(), Name: d.str(), Responses: d.bytes(),
		RedemptionCode: d.str(), PromotionCode: d.str(), ReturnURL: d.str(), Locale: d.str(), CreatedAt: d.time(), ExpiresAt: d.time(),
		OrderID: d.str()}
	if len(d.s) > 0 {
		r.Client = d.str() // sessions of a build before the hold limits end here
	}
	if len(d.s) > 0 {
		r.QueueToken = d.str()
	}
	return r
}

func (e enc) sessionRec(r *SessionRec) enc {
	return e.str(r.ID).str(r.Title).timep(r.StartsAt).timep(r.EndsAt).str(r.VenueID).strs(r.PerkIDs).time(r.CreatedAt).time(r.UpdatedAt)
}

func (d *dec) sessionRec() SessionRec {
	return SessionRec{ID: d.str(), Title: d.str(), StartsAt: d.timep(), EndsAt: d.timep(), VenueID: d.str(), PerkIDs: d.strs(),
		CreatedAt: d.time(), UpdatedAt: d.time()}
}

func (e enc) venueRec(r *VenueRec) enc {
	return e.str(r.ID).str(r.Name).strs(r.PerkIDs).time(r.CreatedAt).time(r.UpdatedAt)
}

func (d *dec) venueRec() VenueRec {
	return VenueRec{ID: d.str(), Name: d.str(), PerkIDs: d.strs(), CreatedAt: d.time(), UpdatedAt: d.time()}
}

// readSection decodes one section into m and order; seq sets a record's
// position and id reads its id. It returns the records in order.
func readSection[T any](d *dec, p *pace, mp *map[string]*T, order *[]string, read func(*dec) T, id func(*T) string, seq func(*T, int)) []*T {
	n := d.count()
	if n == 0 {
		return nil
	}
	m := make(map[string]*T, n)
	*mp = m
	*order = make([]string, 0, n)
	// One slab for all records of a section: records are never deleted one
	// by one, and n small allocations would dominate a large load.
	slab := make([]T, n)
	// One record decoder for the section: declared in the loop, it would
	// escape through read and cost an allocation per record.
	var rd dec
	for i := 0; i < n && d.err == nil; i++ {
		p.tick()
		if len(d.s) == 0 { // the input ended before the count (see readBig)
			d.fail()
			return nil
		}
		rd = dec{s: d.str()}
		r := &slab[i]
		*r = read(&rd)
		if rd.err != nil || len(rd.s) > 0 {
			d.fail()
			return nil
		}
		k := id(r)
		seq(r, i)
		if m[k] = r; len(m) != i+1 {
			d.fail() // a duplicate id
			return nil
		}
		*order = append(*order, k)
	}
	if d.err != nil {
		return nil
	}
	list := make([]*T, n)
	for i := range slab {
		list[i] = &slab[i]
	}
	return list
}

// bigSectionChunk is the number of records one decoding task of a large
// section decodes (see readBig): a section of a million registrations is
// decoded in 16 tasks, a small one in one.
const bigSectionChunk = 1 << 16

// readBig decodes a section that can be large (registrations, check-ins,
// orders) like readSection, but in tasks for run: first the records, in
// chunks of bigSectionChunk, then (in the returned fill task, which the
// caller runs with the index builds) the section's map, which reports a
// duplicate id by returning false. It returns the records in order, nil
// for an empty section.
func readBig[T any](d *dec, run Runner, yield func(), mp *map[string]*T, order *[]string, read func(*dec) T, id func(*T) string, seq func(*T, int)) (list []*T, fill func() bool) {
	n := d.count()
	if n == 0 {
		return nil, nil
	}
	// Each record is length-prefixed: find where each chunk starts by
	// stepping over lengths, so the chunks decode independently.
	chunks := (n + bigSectionChunk - 1) / bigSectionChunk
	bodies := make([]string, chunks)
	for c := range bodies {
		start := d.s
		for range min(n-c*bigSectionChunk, bigSectionChunk) {
			// A record takes at least its length byte: the input must not
			// end before the count does (str reads a missing length as 0).
			if len(d.s) == 0 {
				d.fail()
				return nil, nil
			}
			if d.str(); d.err != nil {
				return nil, nil
			}
		}
		bodies[c] = start[:len(start)-len(d.s)]
	}
	// One slab for all records (see readSection).
	slab := make([]T, n)
	ids := make([]string, n)
	list = make([]*T, n)
	bad := make([]bool, chunks)
	tasks := make([]func(), chunks)
	for c := range bodies {
		tasks[c] = func() {
			cd := dec{s: bodies[c]}
			var rd dec // one per task: declared in the loop it would escape per record
			p := pace{yield: yield}
			for i := c * bigSectionChunk; i < min(n, (c+1)*bigSectionChunk); i++ {
				p.tick()
				rd = dec{s: cd.str()}
				r := &slab[i]
				*r = read(&rd)
				if rd.err != nil || len(rd.s) > 0 {
					bad[c] = true
					return
				}
				seq(r, i)
				ids[i] = id(r)
				list[i] = r
			}
		}
	}
	run(tasks...)
	for _, b := range bad {
		if b {
			d.fail()
			return nil, nil
		}
	}
	*order = ids
	return list, func() bool {
		m := make(map[string]*T, n)
		p := pace{yield: yield}
		for i, r := range list {
			p.tick()
			m[ids[i]] = r
		}
		*mp = m
		return len(m) == n
	}
}

// increasing reports whether ids are in strictly increasing order.
func increasing(ids []string) bool {
	for i := 1; i < len(ids); i++ {
		if ids[i-1] >= ids[i] {
			return false
		}
	}
	return true
}

// Runner runs tasks, each exactly once, and returns when all have
// returned. The tasks of one call never write the same memory, so a
// Runner may run them concurrently: the shell decodes a large snapshot on
// all its cores that way, while this package starts no goroutine itself.
type Runner func(tasks ...func())

// RunInOrder is the Runner that runs the tasks one after another.
func RunInOrder(tasks ...func()) {
	for _, t := range tasks {
		t()
	}
}

// DecodeOptions says how DecodeState decodes.
type DecodeOptions struct {
	// Owned hands the buffer over (see UnmarshalStateOwned).
	Owned bool
	// Run runs the independent parts of decoding a snapshot: the record
	// chunks of large sections, then the maps and indexes. nil is
	// RunInOrder.
	Run Runner
	// Yield, when set, is called every paceEvery records of each part
	// (see pace): a caller decoding in the background passes a function
	// that lets other goroutines run. With a concurrent Run it is called
	// concurrently.
	Yield func()
}

// paceEvery is the number of records between two calls of a yield hook:
// some tens to hundreds of microseconds of decoding, encoding or indexing.
const paceEvery = 256

// pace calls yield once every paceEvery ticks (one tick a record), the
// hook by which background work (the snapshot worker's rebuild) lets the
// goroutines that answer requests run first. A nil pace or yield costs a
// compare (the small program sections pass nil). Not safe for concurrent
// use: each task has its own.
type pace struct {
	yield func()
	n     int
}

func (p *pace) tick() {
	if p == nil || p.yield == nil {
		return
	}
	if p.n++; p.n >= paceEvery {
		p.n = 0
		p.yield()
	}
}

// UnmarshalState decodes a snapshot and rebuilds the indexes. It checks the
// structural invariants a hostile or corrupt snapshot could break (every
// ordered id has its record, references resolve), so later code never
// meets a nil record.
func UnmarshalState(b []byte) (*State, error) {
	return DecodeState(b, DecodeOptions{})
}

// UnmarshalStateOwned is UnmarshalState for a buffer the caller hands over,
// such as the fresh one snapshots.Store.LoadNewest returns: the state's
// strings point into b instead of into a copy of it, which saves copying
// (and faulting in) a second snapshot-sized buffer on a restart. The
// caller must not modify b afterwards.
func UnmarshalStateOwned(b []byte) (*State, error) {
	return DecodeState(b, DecodeOptions{Owned: true})
}

// DecodeState is UnmarshalState with options: a buffer handed over, and a
// Runner for the parts of the work that are independent of each other.
// The state decoded is the same whatever the Runner.
func DecodeState(b []byte, o DecodeOptions) (*State, error) {
	owned, run := o.Owned, o.Run
	if run == nil {
		run = RunInOrder
	}
	if len(b) < 1 {
		return nil, errors.New("event: unmarshal state: empty")
	}
	s := newState("")
	switch b[0] {
	case 1:
		if err := json.Unmarshal(b[1:], s); err != nil {
			return nil, fmt.Errorf("event: unmarshal state: %w", err)
		}
	case stateVersion:
		body := b[1:]
		var str string
		if owned {
			// b is never written again, so a string over it is immutable.
			str = unsafe.String(unsafe.SliceData(body), len(body))
		} else {
			str = string(body)
		}
		regsFill, fills, err := s.decodeBinary(str, run, o.Yield)
		if err != nil {
			return nil, fmt.Errorf("event: unmarshal state: %w", err)
		}
		// The registrations by id are left to their first use when nothing
		// in the load needs them and their ids are strictly increasing
		// (ULIDs in creation order), which proves them unique; otherwise
		// they are filled now, beside the indexes.
		lazy := regsFill != nil && len(s.CheckinOrder) == 0 && len(s.Grants) == 0 && len(s.SpeakerOrder) == 0 &&
			increasing(s.RegOrder)
		if regsFill != nil && !lazy {
			fills = append([]func() bool{regsFill}, fills...)
		}
		// The maps of the large sections and the indexes are independent
		// of each other: one run, largest first.
		ok := make([]bool, len(fills))
		tasks := make([]func(), 0, len(fills)+4)
		for i, f := range fills {
			tasks = append(tasks, func() { ok[i] = f() })
		}
		s.initIndex()
		if lazy {
			s.Regs, s.idx.regsLazy = nil, true
		}
		tasks = append(tasks, s.indexTasks(o.Yield)...)
		// decodeBinary builds each map and its order together, so only the
		// references between records remain to be checked: those of the
		// registrations beside the index builds, the rest after them.
		var regRefs error
		tasks = append(tasks, func() { regRefs = s.checkRegRefs() })
		run(tasks...)
		for _, good := range ok {
			if !good {
				return nil, fmt.Errorf("event: unmarshal state: %w", errCorrupt) // a duplicate id
			}
		}
		s.sortWaitlists()
		// The waiting room's derived fields (its lookups by id and token,
		// its counts): without them the first join replayed after the
		// snapshot wrote to a nil map.
		s.reindexRoom()
		if err := errors.Join(regRefs, s.checkOtherRefs()); err != nil {
			return nil, fmt.Errorf("event: unmarshal state %s: %w", s.ID, err)
		}
		return s, nil
	default:
		return nil, fmt.Errorf("event: unmarshal state: unknown version %d", b[0])
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("event: unmarshal state %s: %w", s.ID, err)
	}
	s.reindex()
	return s, nil
}

// decodeBinary decodes a version 2 body. The maps of the large sections
// are left to the returned fill tasks (see readBig).
func (s *State) decodeBinary(body string, run Runner, yield func()) (regsFill func() bool, fills []func() bool, err error) {
	d := &dec{s: body}
	p := &pace{yield: yield}
	s.ID = d.str()
	if d.flag() {
		rd := dec{s: d.str()}
		e := rd.eventRec()
		s.Event = &e
		if rd.err != nil || len(rd.s) > 0 {
			d.fail()
		}
	}
	readSection(d, p, &s.Types, &s.TypeOrder, (*dec).typeRec, func(r *TicketTypeRec) string { return r.ID }, func(r *TicketTypeRec, i int) { r.Seq = i })
	var fill func() bool
	add := func() {
		if fill != nil {
			fills = append(fills, fill)
		}
	}
	s.mem.regList, regsFill = readBig(d, run, yield, &s.Regs, &s.RegOrder, (*dec).regRec, func(r *RegistrationRec) string { return r.ID }, func(r *RegistrationRec, i int) { r.Seq = i })
	s.mem.checkinList, fill = readBig(d, run, yield, &s.Checkins, &s.CheckinOrder, (*dec).checkinRec, func(r *CheckinRec) string { return r.ID }, func(r *CheckinRec, i int) { r.Seq = i })
	add()
	readSection(d, p, &s.Codes, &s.CodeOrder, (*dec).codeRec, func(r *CodeRec) string { return r.ID }, func(r *CodeRec, i int) { r.Seq = i })
	readSection(d, p, &s.Addons, &s.AddonOrder, (*dec).addonRec, func(r *AddonRec) string { return r.ID }, func(r *AddonRec, i int) { r.Seq = i })
	readSection(d, p, &s.Bundles, &s.BundleOrder, (*dec).bundleRec, func(r *BundleRec) string { return r.ID }, func(r *BundleRec, i int) { r.Seq = i })
	s.mem.orderList, fill = readBig(d, run, yield, &s.Orders, &s.OrderOrder, (*dec).orderRec, func(r *OrderRec) string { return r.ID }, func(r *OrderRec, i int) { r.Seq = i })
	add()
	readSection(d, p, &s.Checkouts, &s.CheckoutOrder, (*dec).checkoutRec, func(r *CheckoutRec) string { return r.ID }, func(r *CheckoutRec, i int) { r.Seq = i })
	readSection(d, p, &s.Sessions, &s.SessionOrder, (*dec).sessionRec, func(r *SessionRec) string { return r.ID }, func(r *SessionRec, i int) { r.Seq = i })
	readSection(d, p, &s.Venues, &s.VenueOrder, (*dec).venueRec, func(r *VenueRec) string { return r.ID }, func(r *VenueRec, i int) { r.Seq = i })
	s.decodeProgram(d)
	s.decodeContent(d)
	s.decodeDoor(d)
	if len(d.s) > 0 && d.err == nil {
		s.FeedSeq = d.uvarint()
	}
	s.decodeRoom(d)
	if d.err != nil {
		return nil, nil, d.err
	}
	if len(d.s) > 0 {
		return nil, nil, fmt.Errorf("%d trailing bytes", len(d.s))
	}
	return regsFill, fills, nil
}
