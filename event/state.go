package event

import (
	"encoding/json"
	"hash/maphash"
	"slices"
	"strings"
	"time"
)

// Statuses of records. They are the wire values.
const (
	EventDraft     = "draft"
	EventPublished = "published"
	EventArchived  = "archived"

	// Sellable lifecycle of ticket types, add-ons and bundles.
	SellDraft    = "draft"
	SellOpen     = "open"
	SellClosed   = "closed"
	SellArchived = "archived"

	RegPending    = "pending"
	RegConfirmed  = "confirmed"
	RegWaitlisted = "waitlisted"
	RegRejected   = "rejected"
	RegCancelled  = "cancelled"

	OrderStatusOpen            = "open"
	OrderStatusAwaitingPayment = "awaiting_payment"
	OrderStatusPaid            = "paid"
	OrderStatusCancelled       = "cancelled"
	OrderStatusExpired         = "expired"

	CodeStatusActive    = "active"
	CodeStatusDisabled  = "disabled"
	CodeStatusExpired   = "expired"
	CodeStatusExhausted = "exhausted"

	ItemRegistrationType = "registration_type"
	ItemAddon            = "addon"
	ItemBundle           = "bundle"
)

// State is the whole state of one event. Exported fields are the snapshot
// (MarshalState); unexported fields are indexes rebuilt by reindex. Every
// map has an ordered id slice beside it, because output order must never
// depend on map iteration. Records carry Seq, their index in that slice, so
// a cursor finds its place in O(1).
//
// Later features add fields here (speakers, sponsors, perks, perk bindings,
// forms, promotion codes) without changing the existing ones: snapshots
// decode unknown-to-old and missing-in-new fields gracefully.
type State struct {
	ID    string    `json:"id"`
	Event *EventRec `json:"event"`

	Types     map[string]*TicketTypeRec `json:"types"`
	TypeOrder []string                  `json:"typeOrder"`

	Regs     map[string]*RegistrationRec `json:"regs"`
	RegOrder []string                    `json:"regOrder"`

	Checkins     map[string]*CheckinRec `json:"checkins"`
	CheckinOrder []string               `json:"checkinOrder"`

	Codes     map[string]*CodeRec `json:"codes"`
	CodeOrder []string            `json:"codeOrder"`

	Addons     map[string]*AddonRec `json:"addons"`
	AddonOrder []string             `json:"addonOrder"`

	Bundles     map[string]*BundleRec `json:"bundles"`
	BundleOrder []string              `json:"bundleOrder"`

	Orders     map[string]*OrderRec `json:"orders"`
	OrderOrder []string             `json:"orderOrder"`

	Checkouts     map[string]*CheckoutRec `json:"checkouts"`
	CheckoutOrder []string                `json:"checkoutOrder"`

	// Agenda sessions and venues belong to the program (filled later by the
	// console); the event keeps them here so an agenda reset can clear them
	// and check-in doors can name them.
	Sessions     map[string]*SessionRec `json:"sessions"`
	SessionOrder []string               `json:"sessionOrder"`
	Venues       map[string]*VenueRec   `json:"venues"`
	VenueOrder   []string               `json:"venueOrder"`

	// The rest of the program and the perks (program.go): perks, speakers,
	// sponsors, and perk bindings keyed by ticket type, redemption code and
	// (individual grants) registration id.
	Perks        map[string]*PerkRec    `json:"perks"`
	PerkOrder    []string               `json:"perkOrder"`
	Speakers     map[string]*SpeakerRec `json:"speakers"`
	SpeakerOrder []string               `json:"speakerOrder"`
	Sponsors     map[string]*SponsorRec `json:"sponsors"`
	SponsorOrder []string               `json:"sponsorOrder"`
	TypePerks    map[string][]string    `json:"typePerks"`
	CodePerks    map[string][]string    `json:"codePerks"`
	Grants       map[string][]string    `json:"grants"`

	// Content is the organizer's content (content.go): registration
	// forms, promotion codes, translations, the event's description. (Its
	// JSON name is still the old "console".)
	Content OrganizerContent `json:"console"`
	// Room is the event's waiting room (waitingroom.go), nil without one.
	Room *RoomRec `json:"room,omitempty"`

	// Door is the door kit's records (door.go): pass stamps, scan answers,
	// conflicts.
	Door DoorState `json:"door"`
	// FeedSeq is the seq of the last change feed entry (feed.go): Apply
	// counts the entries each change produces.
	FeedSeq uint64 `json:"feedSeq,omitempty"`

	idx index
	mem memory
}

// index holds lookups derived from the exported state.
type index struct {
	// regByEmail maps a normalized email to its registrations (see
	// emailRegs), in two shards (see emailShard) that a snapshot load
	// fills on two cores. emailPrev, beside RegOrder, chains each
	// registration to the one before it with the same email (-1: none),
	// so every registration of an email is a walk from its newest, newest
	// first, whatever the size of the event.
	regByEmail     [2]map[string]emailRegs
	emailPrev      []int32
	regByCheckin   map[string]string   // checkin code -> registration (lazy, see tokens)
	regByPass      map[string]string   // pass token -> registration (lazy, see tokens)
	codeByCode     map[string]string   // normalized code -> redemption code id
	orderByNumber  map[string]string   // order number -> order id
	orderByPayment map[string]string   // payment id -> order id
	waitlist       map[string][]string // ticket type -> waitlisted registrations, oldest first
	holds          holdQueue           // holding orders by deadline (see holdqueue.go)
	limits         holdLimits          // the storefront's hold limits (holdlimits.go)
	purge          purgeQueue          // checkout sessions to purge one day (checkoutpurge.go)
	// dash are the dashboard's counters (dashboard.go): kept by Apply
	// and rebuilt with the other indexes, so the console reads counts
	// instead of scanning records.
	dash dashCounters
	// regsLazy reports that State.Regs is not built yet: a snapshot load
	// leaves it to the first use (see State.regs).
	regsLazy bool
	// checkinsLazy reports that State.Checkins is not built yet: a new
	// event's check-ins go into CheckinOrder and the list of records, and
	// the map by id is made on its first use (see State.checkins), so a
	// door's batch of scans writes no table of every check-in (a door
	// reads a pass's check-ins from the door index, not by id).
	checkinsLazy bool
	// tokens reports that regByCheckin and regByPass are built. They are
	// built on first use (a scan or a pass page), never by a snapshot load
	// or a replay, so a restart reaches its first accepted order sooner
	// and a replay fills two maps per registration instead of four.
	tokens bool
	// door is the door kit's index (door.go), built on first use.
	door *doorIndex
	// blocked is the sale view's filter of buyers it does not answer for,
	// built by the first view with a sold-out type; clientMax is the hold
	// limit per client it was built with (saleview.go).
	blocked   *keyFilter
	clientMax int
}

// memory is how a state allocates: capacity hints and record slabs. It
// holds no information about the event (two states with different memory
// are the same state), so it is neither encoded nor compared.
type memory struct {
	// reserve is how many more changes Machine.Reserve announced; Apply
	// counts it down. A collection that is empty when its first record
	// arrives is made with room for reserve/2 records, so a long replay
	// does not rehash its maps at every doubling.
	reserve int
	// regs and orders hand out records from slabs (see slab).
	regs   slab[RegistrationRec]
	orders slab[OrderRec]
	// regList, orderList and checkinList hold the records of RegOrder,
	// OrderOrder and CheckinOrder at the same positions (records are never
	// removed or reordered). Walking them reads the records in memory
	// order, where a lookup by id per record costs a cache miss each in a
	// map of a million entries (snapshot encode and load, reindex).
	regList     []*RegistrationRec
	orderList   []*OrderRec
	checkinList []*CheckinRec
}

// regAt returns the registration at position i of RegOrder. The lists
// are complete for every state this package builds; the map is the
// fallback for one built otherwise (a version 1 snapshot).
func (s *State) regAt(i int) *RegistrationRec {
	if len(s.mem.regList) == len(s.RegOrder) {
		return s.mem.regList[i]
	}
	return s.regs()[s.RegOrder[i]]
}

// orderAt returns the order at position i of OrderOrder.
func (s *State) orderAt(i int) *OrderRec {
	if len(s.mem.orderList) == len(s.OrderOrder) {
		return s.mem.orderList[i]
	}
	return s.Orders[s.OrderOrder[i]]
}

// checkinAt returns the check-in at position i of CheckinOrder.
func (s *State) checkinAt(i int) *CheckinRec {
	if len(s.mem.checkinList) == len(s.CheckinOrder) {
		return s.mem.checkinList[i]
	}
	return s.checkins()[s.CheckinOrder[i]]
}

// checkins returns the check-ins by id, building the map on first use
// (see index.checkinsLazy).
func (s *State) checkins() map[string]*CheckinRec {
	if s.idx.checkinsLazy {
		m := make(map[string]*CheckinRec, len(s.mem.checkinList))
		for _, c := range s.mem.checkinList {
			m[c.ID] = c
		}
		s.Checkins, s.idx.checkinsLazy = m, false
	}
	return s.Checkins
}

// slab hands out records from shared backing arrays: one allocation per
// chunk instead of one per record, and fewer objects for the collector to
// track. Records are never freed one by one (an event only adds them), so
// a chunk lives as long as the state. Chunks grow with the collection (an
// eighth of it, 4 to 512 records), so a small event wastes a few records,
// not a chunk.
type slab[T any] struct{ free []T }

const (
	slabMin = 4
	slabMax = 512
)

// next returns a zeroed record; have is the collection's current size.
func (p *slab[T]) next(have int) *T {
	if len(p.free) == 0 {
		p.free = make([]T, min(max(have/8, slabMin), slabMax))
	}
	r := &p.free[0]
	p.free = p.free[1:]
	return r
}

// maxReserve bounds Machine.Reserve: a hint above it is clamped, so a bad
// count cannot ask for a huge allocation.
const maxReserve = 1 << 22

// reserveFor returns the room to make for a collection that gets its first
// record now, 0 when there is no hint.
func (s *State) reserveFor() int {
	return s.mem.reserve / 2
}

// regs returns the registrations by id. A snapshot load of an event whose
// registrations need no lookup by id to be checked leaves the map to its
// first use (an order placement, the first request after a restart during
// a sale, never needs it; a check-in does): it is a million inserts bound
// by memory latency. Building it only fills a derived view of RegOrder and
// the records, so Decide may call it.
func (s *State) regs() map[string]*RegistrationRec {
	if s.idx.regsLazy {
		m := make(map[string]*RegistrationRec, len(s.mem.regList))
		for _, r := range s.mem.regList {
			m[r.ID] = r
		}
		s.Regs, s.idx.regsLazy = m, false
	}
	return s.Regs
}

// emailSeed seeds emailShard. Shards only spread the index; nothing
// visible depends on them, so a seed per process is fine.
var emailSeed = maphash.MakeSeed()

// emailShard picks the regByEmail shard of a normalized email.
func emailShard(k string) int { return int(maphash.String(emailSeed, k) & 1) }

// emailRegs is what the index knows of one normalized email: its active
// registration ("" when none: one email has at most one), and the
// position in RegOrder of its newest registration of any status, where
// the chain of index.emailPrev starts.
type emailRegs struct {
	active string
	newest int32
}

// newEmailIndex makes the shards of regByEmail with room for n emails.
func newEmailIndex(n int) [2]map[string]emailRegs {
	return [2]map[string]emailRegs{make(map[string]emailRegs, n/2), make(map[string]emailRegs, n/2)}
}

// emailReg returns the active registration of normalized email k.
func (x *index) emailReg(k string) (string, bool) {
	e := x.regByEmail[emailShard(k)][k]
	return e.active, e.active != ""
}

// delEmailReg forgets the active registration of k; its registrations
// stay listed.
func (x *index) delEmailReg(k string) {
	m := x.regByEmail[emailShard(k)]
	if e, ok := m[k]; ok {
		e.active = ""
		m[k] = e
	}
}

// linkEmail indexes registration r, the newest with its email, into
// shard m: it heads the email's chain, and is its active one when active.
func (x *index) linkEmail(m map[string]emailRegs, k string, r *RegistrationRec) {
	e, ok := m[k]
	prev := int32(-1)
	if ok {
		prev = e.newest
	}
	x.emailPrev[r.Seq] = prev
	e.newest = int32(r.Seq)
	if activeReg(r.Status) {
		e.active = r.ID
		if x.blocked != nil {
			x.blocked.add(k, 0) // the buyer is registered (saleview.go)
		}
	}
	m[k] = e
}

// emailRegsOf calls fn with the registrations of normalized email k,
// newest first, from position before (exclusive; len(RegOrder) for all)
// down, until fn answers false.
func (s *State) emailRegsOf(k string, before int, fn func(*RegistrationRec) bool) {
	e, ok := s.idx.regByEmail[emailShard(k)][k]
	if !ok {
		return
	}
	for i := e.newest; i >= 0; i = s.idx.emailPrev[i] {
		if int(i) >= before {
			continue
		}
		if !fn(s.regAt(int(i))) {
			return
		}
	}
}

// ensureTokens builds the check-in code and pass token indexes. It only
// fills a derived cache, so Decide may call it.
func (s *State) ensureTokens() {
	if s.idx.tokens {
		return
	}
	n := len(s.RegOrder)
	s.idx.regByCheckin, s.idx.regByPass = make(map[string]string, n), make(map[string]string, n)
	for i := range s.RegOrder {
		r := s.regAt(i)
		s.idx.regByCheckin[r.CheckinCode] = r.ID
		s.idx.regByPass[r.PassToken] = r.ID
	}
	s.idx.tokens = true
}

// EventRec is the event itself.
type EventRec struct {
	Name      string     `json:"name"`
	Timezone  string     `json:"timezone"`
	StartsAt  *time.Time `json:"startsAt,omitempty"`
	EndsAt    *time.Time `json:"endsAt,omitempty"`
	Status    string     `json:"status"`
	Currency  string     `json:"currency"`
	CreatedAt time.Time  `json:"createdAt"`
	UpdatedAt time.Time  `json:"updatedAt"`
	// OrdersTaken counts orders ever placed; any order locks the currency.
	OrdersTaken int `json:"ordersTaken,omitempty"`
	// SiteURL is the event's public page, set in the console.
	SiteURL string `json:"siteUrl,omitempty"`
	// WaitTicks counts entries into a waitlist; a registration's WaitSeq
	// orders the waitlist by entry, not by creation (an application
	// approved into the waitlist queues behind those already waiting).
	WaitTicks int `json:"waitTicks,omitempty"`
	// Refund is the event's refund policy, nil until the console sets one
	// (refunds.go).
	Refund *RefundPolicyRec `json:"refund,omitempty"`
	// Venue and Address are where the event takes place (location.go).
	Venue   string `json:"venue,omitempty"`
	Address string `json:"address,omitempty"`
	// OnlineURL is the link to join online (location.go).
	OnlineURL string `json:"onlineUrl,omitempty"`
}

// TicketTypeSpec is the mutable part of a ticket type: what create and
// update set.
type TicketTypeSpec struct {
	Name             string     `json:"name"`
	Capacity         *int       `json:"capacity,omitempty"`
	Price            Money      `json:"price,omitempty"`
	AllowWaitlist    bool       `json:"allowWaitlist,omitempty"`
	IsPublic         bool       `json:"isPublic,omitempty"`
	RequiresApproval bool       `json:"requiresApproval,omitempty"`
	OpensAt          *time.Time `json:"opensAt,omitempty"`
	ClosesAt         *time.Time `json:"closesAt,omitempty"`
	Status           string     `json:"status"`
}

// TicketTypeRec is a registration type with its live counters.
type TicketTypeRec struct {
	ID  string `json:"id"`
	Seq int    `json:"seq"`
	TicketTypeSpec
	CreatedAt  time.Time `json:"createdAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
	Confirmed  int       `json:"confirmed,omitempty"`
	Waitlisted int       `json:"waitlisted,omitempty"`
	Held       int       `json:"held,omitempty"`
}

// RegistrationRec is one person's place (or application) in the event.
type RegistrationRec struct {
	ID          string    `json:"id"`
	Seq         int       `json:"seq"`
	Email       string    `json:"email"`
	Name        string    `json:"name,omitempty"`
	TypeID      string    `json:"typeId,omitempty"`
	Status      string    `json:"status"`
	Reason      string    `json:"reason,omitempty"`
	CheckinCode string    `json:"checkinCode"`
	PassToken   string    `json:"passToken"`
	CodeID      string    `json:"codeId,omitempty"`
	OrderID     string    `json:"orderId,omitempty"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
	WaitSeq     int       `json:"waitSeq,omitempty"`
	// PassVer is the pass stamp of the registration's last change a
	// door device sees (door.go).
	PassVer int64 `json:"passVer,omitempty"`
}

// CheckinRec is one admission at one door.
type CheckinRec struct {
	ID          string    `json:"id"`
	Seq         int       `json:"seq"`
	RegID       string    `json:"regId"`
	SubjectType string    `json:"subjectType"`
	SubjectID   string    `json:"subjectId,omitempty"`
	Method      string    `json:"method"`
	At          time.Time `json:"at"`
	DeviceID    string    `json:"deviceId,omitempty"` // the door device that scanned it (door.go)
	ScanID      string    `json:"scanId,omitempty"`
}

// CodeRec is a redemption code. Held counts uses reserved by live orders; a
// hold becomes a use when its order is fulfilled.
type CodeRec struct {
	ID        string     `json:"id"`
	Seq       int        `json:"seq"`
	TypeID    string     `json:"typeId"`
	Code      string     `json:"code"`
	Label     string     `json:"label,omitempty"`
	MaxUses   *int       `json:"maxUses,omitempty"`
	Uses      int        `json:"uses,omitempty"`
	Held      int        `json:"held,omitempty"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	Disabled  bool       `json:"disabled,omitempty"`
	CreatedAt time.Time  `json:"createdAt"`
}

// AddonSpec is the mutable part of an add-on.
type AddonSpec struct {
	Name     string `json:"name"`
	Price    Money  `json:"price,omitempty"`
	Capacity *int   `json:"capacity,omitempty"`
	Status   string `json:"status"`
}

// AddonRec is an add-on with its live counters; Sold counts fulfilled units.
type AddonRec struct {
	ID  string `json:"id"`
	Seq int    `json:"seq"`
	AddonSpec
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	Sold      int       `json:"sold,omitempty"`
	Held      int       `json:"held,omitempty"`
}

// BundleSpec is the mutable part of a bundle.
type BundleSpec struct {
	Name     string       `json:"name"`
	Price    Money        `json:"price,omitempty"`
	Capacity *int         `json:"capacity,omitempty"`
	Status   string       `json:"status"`
	Items    []BundleItem `json:"items"`
}

// BundleRec is a bundle with its live counters.
type BundleRec struct {
	ID  string `json:"id"`
	Seq int    `json:"seq"`
	BundleSpec
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	Sold      int       `json:"sold,omitempty"`
	Held      int       `json:"held,omitempty"`
}

// OrderLine is a priced line of an order: prices are purchase-time
// snapshots in minor units.
type OrderLine struct {
	ItemType  string `json:"itemType"`
	ItemID    string `json:"itemId"`
	Name      string `json:"name"`
	Quantity  int    `json:"quantity"`
	UnitPrice Money  `json:"unitPrice"`
	Amount    Money  `json:"amount"`
}

// Hold is a number of places an order keeps of one sellable.
type Hold struct {
	Kind string `json:"k"`
	ID   string `json:"id"`
	Qty  int    `json:"q"`
}

// OrderRec is a purchase. Holds are computed at placement and stored, so a
// release undoes exactly what was held even if a bundle changed since.
type OrderRec struct {
	ID                string          `json:"id"`
	Seq               int             `json:"seq"`
	Number            string          `json:"number"`
	Email             string          `json:"email"`
	Name              string          `json:"name,omitempty"`
	Lines             []OrderLine     `json:"lines"`
	Holds             []Hold          `json:"holds,omitempty"`
	AdmissionTypeID   string          `json:"admissionTypeId,omitempty"`
	CodeID            string          `json:"codeId,omitempty"`
	CodeHeld          bool            `json:"codeHeld,omitempty"`
	Responses         json.RawMessage `json:"responses,omitempty"`
	Status            string          `json:"status"`
	Total             Money           `json:"total"`
	Currency          string          `json:"currency"`
	HoldUntil         time.Time       `json:"holdUntil"`
	PaymentID         string          `json:"paymentId,omitempty"`
	SuccessURL        string          `json:"successUrl,omitempty"`
	CancelURL         string          `json:"cancelUrl,omitempty"`
	AlreadyRegistered bool            `json:"alreadyRegistered,omitempty"`
	RegistrationID    string          `json:"registrationId,omitempty"`
	CreatedAt         time.Time       `json:"createdAt"`
	UpdatedAt         time.Time       `json:"updatedAt"`
	CheckoutSessionID string          `json:"checkoutSessionId,omitempty"`
	// Refunds are the console's refunds of a paid order, oldest first.
	Refunds []RefundRec `json:"refunds,omitempty"`
	// PromoID is the promotion code of the order and Discount what it took
	// off (promocodes.go); the lines and Total are already discounted.
	PromoID  string `json:"promoId,omitempty"`
	Discount Money  `json:"discount,omitempty"`
	// Provider, ProviderRef and ProviderURL are a hosted provider's
	// payment page (provider.go): ProviderRef is the payment that paid
	// the order once it is paid.
	Provider    string `json:"provider,omitempty"`
	ProviderRef string `json:"providerRef,omitempty"`
	ProviderURL string `json:"providerUrl,omitempty"`
	// PreparedAt and PreparedHold are the kept prepare of a hosted
	// provider's confirm of the open order (OrderConfirmPrepared).
	PreparedAt   time.Time `json:"preparedAt,omitzero"`
	PreparedHold time.Time `json:"preparedHold,omitzero"`
	// Client is the storefront caller the hold limits count the order
	// against (holdlimits.go); empty on the Developer API.
	Client string `json:"client,omitempty"`
}

// holding reports whether the order still keeps places.
func (o *OrderRec) holding() bool {
	return o.Status == OrderStatusOpen || o.Status == OrderStatusAwaitingPayment
}

// CheckoutRec is a hosted checkout handoff; it holds no seat.
type CheckoutRec struct {
	ID             string          `json:"id"`
	Seq            int             `json:"seq"`
	Items          []OrderItem     `json:"items"`
	Email          string          `json:"email,omitempty"`
	Name           string          `json:"name,omitempty"`
	Responses      json.RawMessage `json:"responses,omitempty"`
	RedemptionCode string          `json:"redemptionCode,omitempty"`
	PromotionCode  string          `json:"promotionCode,omitempty"`
	ReturnURL      string          `json:"returnUrl,omitempty"`
	Locale         string          `json:"locale,omitempty"`
	CreatedAt      time.Time       `json:"createdAt"`
	ExpiresAt      time.Time       `json:"expiresAt"`
	// OrderID is the last order placed from the session: while it is
	// open, awaiting payment or paid, placing again answers it (a double
	// submit of the hosted page places nothing more).
	OrderID string `json:"orderId,omitempty"`
	// Client is the storefront caller that created it (holdlimits.go).
	Client string `json:"client,omitempty"`
	// QueueToken is the waiting room's token the session was created
	// with: its hosted page's order spends it (waitingroom.go).
	QueueToken string `json:"queueToken,omitempty"`
}

// SessionRec is an agenda session (program.go). Seq is its position in
// agenda (time) order.
type SessionRec struct {
	ID        string     `json:"id"`
	Seq       int        `json:"seq"`
	Title     string     `json:"title"`
	StartsAt  *time.Time `json:"startsAt,omitempty"`
	EndsAt    *time.Time `json:"endsAt,omitempty"`
	VenueID   string     `json:"venueId,omitempty"`
	PerkIDs   []string   `json:"perkIds,omitempty"`
	CreatedAt time.Time  `json:"createdAt"`
	UpdatedAt time.Time  `json:"updatedAt"`
}

// VenueRec is a room (program.go); PerkIDs is its gate.
type VenueRec struct {
	ID        string    `json:"id"`
	Seq       int       `json:"seq"`
	Name      string    `json:"name"`
	PerkIDs   []string  `json:"perkIds,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

func newState(id string) *State {
	s := &State{
		ID:        id,
		Types:     map[string]*TicketTypeRec{},
		Regs:      map[string]*RegistrationRec{},
		Checkins:  map[string]*CheckinRec{},
		Codes:     map[string]*CodeRec{},
		Addons:    map[string]*AddonRec{},
		Bundles:   map[string]*BundleRec{},
		Orders:    map[string]*OrderRec{},
		Checkouts: map[string]*CheckoutRec{},
		Sessions:  map[string]*SessionRec{},
		Venues:    map[string]*VenueRec{},
		Perks:     map[string]*PerkRec{},
		Speakers:  map[string]*SpeakerRec{},
		Sponsors:  map[string]*SponsorRec{},
		TypePerks: map[string][]string{},
		CodePerks: map[string][]string{},
		Grants:    map[string][]string{},
	}
	s.reindex()
	// A new event's check-ins by id are left to their first use too.
	s.idx.checkinsLazy = true
	return s
}

func normEmail(e string) string { return NormEmail(e) }

// normCode is the identity of a redemption code: trimmed, case-insensitive.
func normCode(c string) string { return strings.ToUpper(strings.TrimSpace(c)) }

// activeReg reports whether a registration status blocks a second one for
// the same email.
func activeReg(status string) bool { return status != RegCancelled && status != RegRejected }

// reindex rebuilds every derived index from the exported state, after
// decoding a snapshot.
func (s *State) reindex() {
	s.initIndex()
	RunInOrder(s.indexTasks(nil)...)
	s.sortWaitlists()
	s.reindexRoom()
}

// initIndex makes the empty indexes. Presized: rebuilding the indexes of a
// large event is the bulk of a snapshot load, and map growth would double
// it.
func (s *State) initIndex() {
	s.idx = index{
		regByEmail:     newEmailIndex(len(s.RegOrder)),
		emailPrev:      make([]int32, len(s.RegOrder)),
		codeByCode:     make(map[string]string, len(s.CodeOrder)),
		orderByNumber:  make(map[string]string, len(s.OrderOrder)),
		orderByPayment: map[string]string{},
		waitlist:       map[string][]string{},
		dash:           newDashCounters(),
	}
}

// indexTasks returns the builds of the indexes from the records, largest
// first. Each writes its own indexes and only reads records (never the
// maps by id), so they may run concurrently (see Runner), also with the
// fills of those maps. sortWaitlists finishes the job.
func (s *State) indexTasks(yield func()) []func() {
	return []func(){
		// The e-mail index in its two shards; the first task also queues
		// the waitlisted.
		func() { s.indexRegs(0, yield) },
		func() { s.indexRegs(1, yield) },
		func() {
			p := pace{yield: yield}
			for i := range s.OrderOrder {
				p.tick()
				o := s.orderAt(i)
				s.idx.orderByNumber[o.Number] = o.ID
				if o.PaymentID != "" {
					s.idx.orderByPayment[o.PaymentID] = o.ID
				}
				if o.holding() {
					s.queueHold(o)
					s.indexOpenOrder(o)
				}
				s.idx.dash.indexOrder(o)
			}
		},
		func() {
			p := pace{yield: yield}
			for i := range s.CheckinOrder {
				p.tick()
				c := s.checkinAt(i)
				s.idx.dash.doors[c.SubjectType+":"+c.SubjectID]++
			}
		},
		func() {
			for _, id := range s.CodeOrder {
				c := s.Codes[id]
				s.idx.codeByCode[normCode(c.Code)] = c.ID
			}
			l := &s.idx.limits
			for _, id := range s.CheckoutOrder {
				r := s.Checkouts[id]
				if r.Client != "" && r.OrderID == "" {
					l.add(&l.sessions, r.Client, r.ID)
				}
				s.queueForPurge(r)
			}
		},
	}
}

// sortWaitlists orders each waitlist by entry (it reads the registrations
// by id, so it runs after every index task and map fill).
func (s *State) sortWaitlists() {
	for _, w := range s.idx.waitlist {
		regs := s.regs()
		slices.SortFunc(w, func(a, b string) int { return regs[a].WaitSeq - regs[b].WaitSeq })
	}
}

// indexRegs indexes every registration's email of one shard, oldest
// first as Apply does (each shard writes its own elements of emailPrev).
func (s *State) indexRegs(shard int, yield func()) {
	m := s.idx.regByEmail[shard]
	p := pace{yield: yield}
	for i := range s.RegOrder {
		p.tick()
		r := s.regAt(i)
		if k := normEmail(r.Email); emailShard(k) == shard {
			s.idx.linkEmail(m, k, r)
		}
		if shard == 0 && r.Status == RegWaitlisted {
			s.idx.waitlist[r.TypeID] = append(s.idx.waitlist[r.TypeID], r.ID)
		}
	}
}

// indexReg indexes a new registration (r.Seq is its position, the end
// of RegOrder).
func (s *State) indexReg(r *RegistrationRec) {
	k := normEmail(r.Email)
	s.idx.emailPrev = append(s.idx.emailPrev, 0)
	s.idx.linkEmail(s.idx.regByEmail[emailShard(k)], k, r)
	if s.idx.tokens {
		s.idx.regByCheckin[r.CheckinCode] = r.ID
		s.idx.regByPass[r.PassToken] = r.ID
	}
	if r.Status == RegWaitlisted {
		s.idx.waitlist[r.TypeID] = append(s.idx.waitlist[r.TypeID], r.ID)
	}
}

// room is how many more places a capacity allows; -1 capacity is unlimited.
const unlimited = int(^uint(0) >> 2)

func room(capacity *int, used int) int {
	if capacity == nil {
		return unlimited
	}
	if r := *capacity - used; r > 0 {
		return r
	}
	return 0
}

func (t *TicketTypeRec) room() int { return room(t.Capacity, t.Confirmed+t.Held) }
func (a *AddonRec) room() int      { return room(a.Capacity, a.Sold+a.Held) }
func (b *BundleRec) room() int     { return room(b.Capacity, b.Sold+b.Held) }

// codeStatus is a code's status at now.
func (c *CodeRec) status(now time.Time) string {
	switch {
	case c.Disabled:
		return CodeStatusDisabled
	case c.ExpiresAt != nil && !now.Before(*c.ExpiresAt):
		return CodeStatusExpired
	case c.MaxUses != nil && c.Uses+c.Held >= *c.MaxUses:
		return CodeStatusExhausted
	}
	return CodeStatusActive
}
