package event

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	simSeed = flag.Uint64("seed", 0, "replay one simulation seed (0: run fresh seeds)")
	simRuns = flag.Int("simruns", 8, "number of fresh simulation seeds")
)

// TestSimulation drives random command streams through a machine and checks
// the invariants after every step, and replay equivalence (live == replay
// of the log == snapshot + tail). A failure prints its seed; -seed replays.
func TestSimulation(t *testing.T) {
	if *simSeed != 0 {
		runSim(t, *simSeed, 400)
		return
	}
	base := uint64(time.Now().UnixNano())
	runs := *simRuns
	if testing.Short() {
		runs = 2
	}
	for i := range runs {
		seed := base + uint64(i)
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runSim(t, seed, 400) })
	}
}

type sim struct {
	t       *testing.T
	seed    uint64
	rng     *rand.Rand
	m       *Machine
	now     time.Time
	log     [][]byte
	snap    []byte // a snapshot taken at step snapAt
	snapLen int    // log length at the snapshot
	emails  []string
	steps   int
	errs    map[string]int // rejections by command and message, for the log
}

func runSim(t *testing.T, seed uint64, steps int) {
	s := &sim{
		t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		m:   NewMachine("evt_sim", Config{BaseURL: "http://t", OrderHold: 10 * time.Minute, CheckoutSessionTTL: time.Hour}, newSeqIDs(seed)),
		now: time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC), errs: map[string]int{},
	}
	defer func() {
		if t.Failed() {
			t.Logf("simulation seed %d failed at step %d; replay with: go test ./event -run TestSimulation -seed %d", seed, s.steps, seed)
		}
	}()
	for i := range 40 {
		s.emails = append(s.emails, fmt.Sprintf("p%d@x.io", i))
	}
	s.setup()
	snapAt := 1 + s.rng.IntN(steps)
	for s.steps = 0; s.steps < steps; s.steps++ {
		s.exec(s.randomCommand())
		s.checkInvariants()
		if s.steps == snapAt {
			b, err := MarshalState(s.m.State())
			require.NoError(t, err)
			s.snap, s.snapLen = b, len(s.log)
			if s.rng.IntN(2) == 0 {
				// A restart: carry on from the loaded snapshot, whose lazy
				// indexes and slabs must behave like the live state.
				st, err := UnmarshalState(b)
				require.NoError(t, err)
				s.m.Restore(st)
			}
		}
		if s.steps%100 == 99 {
			s.checkReplay()
		}
	}
	s.checkReplay()
	kinds := map[string]int{}
	for _, b := range s.log {
		kinds[string(b[2:2+int(b[1])])]++
	}
	t.Logf("seed %d: %d changes by kind: %v; rejections: %v", seed, len(s.log), kinds, s.errs)
}

func (s *sim) exec(c Command) (any, error) {
	s.t.Helper()
	before, err := MarshalState(s.m.State())
	require.NoError(s.t, err)
	res, changes, err := s.m.Decide(s.now, c)
	after, _ := MarshalState(s.m.State())
	require.Equal(s.t, string(before), string(after), "Decide mutated the state on %T", c)
	if err != nil {
		var e *Error
		require.True(s.t, errors.As(err, &e), "%T: non-business error %v", c, err)
		require.Empty(s.t, changes)
		s.errs[fmt.Sprintf("%T: %s", c, e.Message)]++
		return nil, err
	}
	for _, ch := range changes {
		b, err := MarshalChange(ch)
		require.NoError(s.t, err)
		back, err := UnmarshalChange(b)
		require.NoError(s.t, err)
		s.log = append(s.log, b)
		s.m.Apply(back)
	}
	return res, nil
}

func (s *sim) must(c Command) any {
	res, err := s.exec(c)
	require.NoError(s.t, err, "%T", c)
	return res
}

func (s *sim) setup() {
	start := Time{s.now.Add(30 * 24 * time.Hour)}
	s.must(CreateEvent{Name: "Sim", Timezone: "UTC", StartsAt: &start})
	s.must(UpdateEvent{Status: Some(EventPublished)})
	c1, c2 := 3, 2
	yes := false
	s.must(CreateTicketType{Name: "GA", Capacity: &c1, PriceAmount: 1000, AllowWaitlist: true})
	s.must(CreateTicketType{Name: "Free", Capacity: &c2})
	s.must(CreateTicketType{Name: "Hidden", Capacity: &c2, PriceAmount: 500, IsPublic: &yes})
	s.must(CreateTicketType{Name: "Approval", Capacity: &c2, RequiresApproval: true, AllowWaitlist: true})
	for _, id := range []string{"tt_1", "tt_2", "tt_3", "tt_4"} {
		s.must(UpdateTicketType{ID: id, Status: Some(SellOpen)})
	}
	a1, a2 := 4, 1
	s.must(CreateAddon{Name: "Shirt", PriceAmount: 200, Capacity: &a1})
	s.must(CreateAddon{Name: "Dinner", PriceAmount: 0, Capacity: &a2})
	s.must(UpdateAddon{ID: "ao_1", Status: Some(SellOpen)})
	s.must(UpdateAddon{ID: "ao_2", Status: Some(SellOpen)})
	b1 := 2
	s.must(CreateBundle{Name: "Pack", PriceAmount: 1100, Capacity: &b1, Items: []BundleItem{{ItemType: ItemRegistrationType, ItemID: "tt_1", Quantity: 1}, {ItemType: ItemAddon, ItemID: "ao_1", Quantity: 1}}})
	s.must(UpdateBundle{ID: "bdl_1", Status: Some(SellOpen)})
	s.must(MintCodes{RegistrationTypeID: "tt_3", Code: "HID", MaxUses: Some(2)})
	s.must(MintCodes{RegistrationTypeID: "tt_1", Code: "GA1"})
	s.setupProgram()
	s.setupContent()
}

func (s *sim) pick(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return ids[s.rng.IntN(len(ids))]
}

var simTypes = []string{"tt_1", "tt_2", "tt_3", "tt_4", "tt_404"}

func (s *sim) randomItems() []OrderItem {
	var items []OrderItem
	switch s.rng.IntN(4) {
	case 0:
		items = append(items, OrderItem{ItemType: ItemBundle, ItemID: "bdl_1", Quantity: 1})
	case 1, 2:
		items = append(items, OrderItem{ItemType: ItemRegistrationType, ItemID: s.pick(simTypes), Quantity: 1})
	}
	if s.rng.IntN(2) == 0 {
		items = append(items, OrderItem{ItemType: ItemAddon, ItemID: s.pick([]string{"ao_1", "ao_2"}), Quantity: 1 + s.rng.IntN(2)})
	}
	return items
}

func (s *sim) randomCommand() Command {
	st := s.m.State()
	regs, orders, codes := st.RegOrder, st.OrderOrder, st.CodeOrder
	if s.rng.IntN(5) != 0 {
		// Mostly act on live orders: that is where the rules are.
		var live []string
		for _, id := range orders {
			if st.Orders[id].holding() {
				live = append(live, id)
			}
		}
		if len(live) > 0 {
			orders = live
		}
	}
	email := s.pick(s.emails)
	switch s.rng.IntN(25) {
	case 22, 23, 24:
		return s.randomProgramCommand()
	case 20, 21:
		return PlaceOrder{Email: email, Items: s.randomItems()}
	case 0, 1:
		return CreateRegistration{Email: email, RegistrationTypeID: s.pick(simTypes)}
	case 2:
		return ApproveRegistration{ID: s.pick(regs)}
	case 3:
		return RejectRegistration{ID: s.pick(regs), Reason: "no"}
	case 4:
		return CancelRegistration{ID: s.pick(regs)}
	case 5, 6, 7:
		c := PlaceOrder{Email: email, Items: s.randomItems()}
		if s.rng.IntN(3) == 0 {
			c.RedemptionCode = s.pick([]string{"HID", "GA1", "hid", "NOPE"})
		}
		if s.rng.IntN(2) == 0 {
			c.PromotionCode = s.pick(simPromos)
		}
		return c
	case 8, 9:
		return ConfirmOrder{Ref: s.pick(orders), SuccessURL: "https://x.io/ok", CancelURL: "https://x.io/no"}
	case 10, 11:
		c := SettlePayment{PaymentID: "none", Currency: "USD", DeliveryID: fmt.Sprint("d", s.rng.IntN(5)), Outcome: "succeeded"}
		if id := s.pick(orders); id != "none" {
			o := st.Orders[id]
			c.PaymentID, c.Amount = o.PaymentID, o.Total
		}
		if s.rng.IntN(5) == 0 {
			c.Amount++
		}
		if s.rng.IntN(5) == 0 {
			c.Outcome = "failed"
		}
		return c
	case 12:
		if s.rng.IntN(2) == 0 {
			return s.randomRefundCommand()
		}
		return CancelOrder{Ref: s.pick(orders)}
	case 13, 14:
		s.now = s.now.Add(time.Duration(s.rng.IntN(8)) * time.Minute)
		return Expire{Now: s.now}
	case 15:
		door := s.pick([]string{"event", "session", "venue"})
		c := RecordCheckin{RegistrationID: s.pick(regs), SubjectType: door}
		if r, ok := st.regs()[c.RegistrationID]; ok && s.rng.IntN(2) == 0 {
			c.RegistrationID, c.CheckinCode = "", r.CheckinCode
		}
		if door != "event" {
			c.SubjectID = s.pick(s.doors(door))
		}
		return c
	case 16:
		var capacity Opt[int]
		if s.rng.IntN(4) == 0 {
			capacity = Null[int]()
		} else {
			capacity = Some(s.rng.IntN(5))
		}
		return UpdateTicketType{ID: s.pick(simTypes), Capacity: capacity}
	case 17:
		switch s.rng.IntN(4) {
		case 0:
			return DisableCode{ID: s.pick(codes)}
		case 1:
			return MintCodes{RegistrationTypeID: "tt_3", Count: 1 + s.rng.IntN(2), MaxUses: Some(1 + s.rng.IntN(2))}
		case 2:
			return UpdateAddon{ID: s.pick([]string{"ao_1", "ao_2"}), Capacity: Some(s.rng.IntN(5))}
		default:
			return UpdateBundle{ID: "bdl_1", Capacity: Some(s.rng.IntN(4))}
		}
	case 18:
		if s.rng.IntN(3) == 0 {
			return RotatePass{ID: s.pick(regs)}
		}
		return CancelRegistration{ID: s.pick(regs)}
	default:
		if s.rng.IntN(3) != 0 {
			return PlaceOrder{Email: email, Items: s.randomItems()}
		}
		return ReplaceBundleItems{ID: "bdl_1", Items: []BundleItem{{ItemType: ItemRegistrationType, ItemID: s.pick(simTypes[:4]), Quantity: 1}, {ItemType: ItemAddon, ItemID: "ao_2", Quantity: 1}}}
	}
}

// randomRefundCommand settles a pending refund, asks for a refund of a
// paid order (random amount, sometimes forced) or changes the policy.
func (s *sim) randomRefundCommand() Command {
	st := s.m.State()
	var paid []string
	for _, id := range st.OrderOrder {
		o := st.Orders[id]
		for _, r := range o.Refunds {
			if r.Status == RefundPending {
				c := CompleteRefund{Ref: o.Number, RefundID: r.ID, Outcome: "succeeded"}
				if s.rng.IntN(4) == 0 {
					c.Outcome, c.Error = "failed", "declined"
				}
				return c
			}
		}
		if o.Status == OrderStatusPaid {
			paid = append(paid, id)
		}
	}
	if s.rng.IntN(6) == 0 {
		c := SetRefundPolicy{Refundable: s.rng.IntN(3) != 0, FeePercent: s.rng.IntN(4) * 10}
		if s.rng.IntN(3) == 0 {
			h := s.rng.IntN(48)
			c.HoursBeforeStart = &h
		}
		return c
	}
	c := RequestRefund{Ref: s.pick(paid), Force: s.rng.IntN(3) == 0, Reason: "sim"}
	if o, ok := st.Orders[c.Ref]; ok && o.Total > 0 && s.rng.IntN(2) == 0 {
		a := 1 + Money(s.rng.Int64N(int64(o.Total)))
		c.Amount = &a
	}
	return c
}

// checkRefunds checks an order's refunds: never more than paid, at most
// one pending, the status follows the refunds, and a fully refunded
// order's own registration is no longer active.
func (s *sim) checkRefunds(o *OrderRec) {
	t, st := s.t, s.m.State()
	var refunded Money
	pending, full := 0, false
	for _, r := range o.Refunds {
		switch r.Status {
		case RefundPending:
			pending++
			refunded += r.Amount
		case RefundSucceeded:
			refunded += r.Amount
			full = full || r.Full
		}
		require.Positive(t, r.Amount, "refund %s of order %s", r.ID, o.ID)
	}
	require.LessOrEqual(t, refunded, o.Total, "order %s refunded more than paid", o.ID)
	require.LessOrEqual(t, pending, 1, "order %s has several pending refunds", o.ID)
	switch {
	case o.Status == OrderStatusExpired || o.Status == OrderStatusCancelled:
		// A late payment's refund: the whole payment, the order unchanged.
		if refunded > 0 {
			require.Equal(t, o.Total, refunded, "late refund of order %s", o.ID)
		}
	case full:
		require.Equal(t, OrderStatusRefunded, o.Status, "order %s", o.ID)
		if r, ok := st.regs()[o.RegistrationID]; ok && r.OrderID == o.ID {
			require.False(t, activeReg(r.Status), "registration %s of refunded order %s is %s", r.ID, o.ID, r.Status)
		}
	case refunded > 0:
		require.Equal(t, OrderStatusPaid, o.Status, "partly refunded order %s", o.ID)
	}
}

// checkInvariants recomputes every counter from the records and checks the
// capacity, check-in and code-use invariants.
func (s *sim) checkInvariants() {
	s.checkContent()
	t, st := s.t, s.m.State()
	type count struct{ confirmed, waitlisted, held, sold int }
	types, addons, bundles := map[string]*count{}, map[string]*count{}, map[string]*count{}
	get := func(m map[string]*count, id string) *count {
		if m[id] == nil {
			m[id] = &count{}
		}
		return m[id]
	}
	codeUses, codeHeld := map[string]int{}, map[string]int{}
	active := map[string]string{}
	for _, id := range st.RegOrder {
		r := st.regs()[id]
		if r.TypeID != "" {
			switch r.Status {
			case RegConfirmed:
				get(types, r.TypeID).confirmed++
			case RegWaitlisted:
				get(types, r.TypeID).waitlisted++
			}
		}
		if activeReg(r.Status) {
			prev, dup := active[normEmail(r.Email)]
			require.False(t, dup, "two active registrations %s and %s for one email", prev, id)
			active[normEmail(r.Email)] = id
			if r.CodeID != "" {
				codeUses[r.CodeID]++
			}
		}
	}
	for _, id := range st.OrderOrder {
		o := st.Orders[id]
		for _, h := range o.Holds {
			var c *count
			switch h.Kind {
			case ItemRegistrationType:
				c = get(types, h.ID)
			case ItemAddon:
				c = get(addons, h.ID)
			case ItemBundle:
				c = get(bundles, h.ID)
			}
			switch {
			case o.holding():
				c.held += h.Qty
			case o.Status == OrderStatusPaid && h.Kind != ItemRegistrationType:
				c.sold += h.Qty
			}
		}
		if o.holding() && o.CodeHeld {
			codeHeld[o.CodeID]++
		}
		s.checkRefunds(o)
	}
	for _, id := range st.TypeOrder {
		tt, c := st.Types[id], get(types, id)
		require.Equal(t, c.confirmed, tt.Confirmed, "confirmed of %s", id)
		require.Equal(t, c.waitlisted, tt.Waitlisted, "waitlisted of %s", id)
		require.Equal(t, c.held, tt.Held, "held of %s", id)
		if tt.Capacity != nil {
			require.LessOrEqual(t, tt.Confirmed+tt.Held, *tt.Capacity, "ticket type %s over capacity", id)
		}
		require.Len(t, st.idx.waitlist[id], tt.Waitlisted, "waitlist index of %s", id)
	}
	for _, id := range st.AddonOrder {
		a, c := st.Addons[id], get(addons, id)
		require.Equal(t, c.held, a.Held, "held of %s", id)
		require.Equal(t, c.sold, a.Sold, "sold of %s", id)
		if a.Capacity != nil {
			require.LessOrEqual(t, a.Sold+a.Held, *a.Capacity, "add-on %s over capacity", id)
		}
	}
	for _, id := range st.BundleOrder {
		b, c := st.Bundles[id], get(bundles, id)
		require.Equal(t, c.held, b.Held, "held of %s", id)
		require.Equal(t, c.sold, b.Sold, "sold of %s", id)
		if b.Capacity != nil {
			require.LessOrEqual(t, b.Sold+b.Held, *b.Capacity, "bundle %s over capacity", id)
		}
	}
	for _, id := range st.CodeOrder {
		c := st.Codes[id]
		require.Equal(t, codeUses[id], c.Uses, "uses of %s", id)
		require.Equal(t, codeHeld[id], c.Held, "held uses of %s", id)
		if c.MaxUses != nil {
			require.LessOrEqual(t, c.Uses+c.Held, *c.MaxUses, "code %s over maxUses", id)
		}
	}
	doors := map[string]bool{}
	for _, id := range st.CheckinOrder {
		k := st.checkins()[id]
		key := k.RegID + "|" + k.SubjectType + ":" + k.SubjectID
		require.False(t, doors[key], "second check-in at door %s", key)
		doors[key] = true
	}
	var want time.Time
	holding := false
	for _, id := range st.OrderOrder {
		if o := st.Orders[id]; o.holding() && (!holding || o.HoldUntil.Before(want)) {
			want, holding = o.HoldUntil, true
		}
	}
	s.checkProgram()
	d, ok := s.m.NextDeadline()
	require.Equal(t, holding, ok, "NextDeadline reports a hold")
	require.True(t, d.Equal(want), "NextDeadline %v, earliest hold %v", d, want)
}

// checkReplay: live == replay of the whole log == snapshot + tail.
func (s *sim) checkReplay() {
	t := s.t
	live, err := MarshalState(s.m.State())
	require.NoError(t, err)
	re := NewMachine("evt_sim", Config{}, newSeqIDs(0))
	for _, b := range s.log {
		ch, err := UnmarshalChange(b)
		require.NoError(t, err)
		re.Apply(ch)
	}
	got, err := MarshalState(re.State())
	require.NoError(t, err)
	require.Equal(t, string(live), string(got), "replay of %d changes differs from live state", len(s.log))
	// The shell's replay path: records applied without Change values.
	rr := NewMachine("evt_sim", Config{}, newSeqIDs(0))
	rr.Reserve(len(s.log))
	for _, b := range s.log {
		require.NoError(t, rr.ApplyRecord(b))
	}
	got, err = MarshalState(rr.State())
	require.NoError(t, err)
	require.Equal(t, string(live), string(got), "ApplyRecord replay of %d changes differs from live state", len(s.log))
	if s.snap != nil {
		st, err := UnmarshalState(s.snap)
		require.NoError(t, err)
		re := NewMachine("evt_sim", Config{}, newSeqIDs(0))
		re.Restore(st)
		for _, b := range s.log[s.snapLen:] {
			ch, err := UnmarshalChange(b)
			require.NoError(t, err)
			re.Apply(ch)
		}
		got, err := MarshalState(re.State())
		require.NoError(t, err)
		require.Equal(t, string(live), string(got), "snapshot + tail differs from live state")
		// The rebuilt indexes must answer like the live ones.
		re.State().ensureTokens()
		s.m.State().ensureTokens()
		// The registrations by id are a cache built on first use too.
		require.Equal(t, s.m.State().regs(), re.State().regs(), "registrations by id after snapshot + tail")
		require.Equal(t, s.m.State().checkins(), re.State().checkins(), "check-ins by id after snapshot + tail")
		// The hold queue is compared by what it answers: live it may keep
		// stale entries that a rebuilt one never had.
		a, b := s.m.State().idx, re.State().idx
		a.holds, b.holds = nil, nil
		// The hold limits likewise (holdlimits.go): by what they count.
		a.limits, b.limits = s.m.State().liveLimits(s.now), re.State().liveLimits(s.now)
		// The door index is built on first use (a check-in's repeat
		// lookup, a scan, a pass page) and keeps superseded stamps live:
		// compared by each pass's check-ins.
		da, db := s.m.State().doorIdx(), re.State().doorIdx()
		for i := range s.m.State().RegOrder {
			r := s.m.State().regAt(i)
			require.Equal(t, checkinsOf(da, r), checkinsOf(db, re.State().regAt(i)), "check-ins of %s after snapshot + tail", r.ID)
		}
		a.door, b.door = nil, nil
		require.Equal(t, a, b, "indexes after snapshot + tail")
		d1, ok1 := s.m.NextDeadline()
		d2, ok2 := re.NextDeadline()
		require.Equal(t, ok1, ok2, "NextDeadline after snapshot + tail")
		require.True(t, d1.Equal(d2), "NextDeadline %v != %v after snapshot + tail", d1, d2)
	}
}

// checkinsOf lists the check-ins of r in the door index d, in log order.
func checkinsOf(d *doorIndex, r *RegistrationRec) []*CheckinRec {
	var out []*CheckinRec
	d.eachCheckin(r, func(c *CheckinRec) { out = append(out, c) })
	return out
}
