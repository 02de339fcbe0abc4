// Package event is the pure, deterministic state machine of one ticketed
// event: commands in, changes and results out. It does no I/O, reads no
// clock and starts no goroutine; the actor shell (package actors) owns a
// Machine, logs the changes and answers callers.
//
// # Flow
//
// The shell calls Decide(now, cmd). Decide validates against the state and
// returns a result view, the changes that would happen and a business error
// (*Error with a Code). It never mutates the state (it may fill a derived
// lookup cache, see State.ensureTokens). The shell appends the changes to
// the write-ahead log, applies each with Apply, and answers the caller once
// the log is synced. Replay calls Apply with decoded changes only; every
// generated value (ids, check-in codes, pass tokens, order numbers, payment
// ids, hold deadlines) is inside the change, so replay never calls IDs or
// reads Config durations.
//
// # One registry of operations
//
// registry.go lists every command and every change kind once. A command
// is a type in its feature file with its decide (its own part of Decide)
// and its result type (result, see Op); its registry line says its mode:
// a read (never changes anything, so the shell may answer it without
// logging), a write, or an edit that an archived event refuses (Decide
// checks that before the command's decide). A change kind is a type with
// its log name (ChangeKind), its body codec (decodeX, appendBody) and its
// apply; its registry line makes the log decoder and the replay of that
// kind. Adding an operation is one feature-file block plus one registry
// line per command and change kind.
//
// # Effects
//
// What a change owes the world outside the machine (the ticket email of a
// confirmed registration, a webhook, a refund pending at the payment
// provider) is said by the core: AppendEffects(dst, ch), like raft's
// Ready. Effects name records by id, so they cost nothing to compute; the
// shell reads what it sends from the machine after applying the change,
// and writes the outbox, webhook and refund-index entries in the same
// batch as the change. The scripts print each change's effects.
//
// # Concurrency
//
// A Machine is not safe for concurrent use: one actor owns it. Results are
// fresh values with no pointers into the state, so they may be encoded on
// another goroutine after the state moved on. The one exception is the
// sale view (Machine.SaleView, saleview.go), which any goroutine may read
// while the machine goes on: it is immutable but for derived add-only
// structures that Apply writes with atomic stores (a Bloom filter of the
// buyers it does not answer for, the queue's entry table), so a reader at
// worst sees a later addition and answers less.
//
// # Files
//
// api.go, errors.go and effects.go are the contract with the shell;
// registry.go the list of commands and change kinds; commands.go the
// request bodies (the HTTP binder decodes straight into them); changes.go
// the log records of the core features with their codecs and applies;
// state.go the state and its indexes; views.go and commerce_views.go the
// results; decide.go, registrations.go, commerce.go, storefront.go (the
// Storefront wrapper: published events only), hosted.go (reads for hosted
// pages), refunds.go, latepay.go (payments that arrive after the hold),
// content.go (the organizer's content: forms.go, promocodes.go,
// translations.go, each with its _views.go) and program.go (program and perks, with
// program_views.go), holdlimits.go (the storefront's hold limits: one open
// order per email, open orders and checkout sessions per client) and
// waitingroom.go (a drop's waiting room: queue, shuffle, stock-aware
// admission, queue tokens) the decisions, each feature file with its commands'
// decide methods and its own change kinds; apply.go Apply and the helpers
// the applies share; codec.go (the record header, ApplyRecord), bincodec.go
// (the field encodings) and statecodec.go the byte formats; email.go the
// one email rule; redirect.go the one rule for URLs buyers are sent to;
// examples.go the OpenAPI example bodies; door.go the door kit (batched
// scans with per-scan verdicts, pass stamps for a change cursor that skips
// nothing, door conflicts; decisions §18), doorbatch.go a batch's one
// record and its feed span (the check-ins' feed entries written as one
// record, rendered by the feed's reader), doorpasses.go a batch's passes
// resolved outside the actor (PassIndex, checked hints) and the door's
// tables built ahead of its first batch (PrepareDoor). Tests: testdata/*.txt scripts run by
// datadriven_test.go (-rewrite regenerates them), sim_test.go (seeded
// simulation, -seed and -simruns), fuzz_test.go, bench_test.go,
// replay_bench_test.go and perf_test.go (benchmarks of recovery, snapshots
// of a million registrations and the hot paths).
//
// # Rules decided here (where the spec leaves room)
//
//   - Hold limits (holdlimits.go) count only storefront orders placed with
//     a Client, and open means holding places (open or awaiting payment).
//     The hosted pages are one client namespace per buyer address.
//   - The waiting room gates storefront orders and checkout sessions from
//     onSaleAt only (before it, the ticket types' opensAt is the
//     organizer's control). A token is checked when a checkout session is
//     created and spent by the session's order. Admission counts one place
//     per token; joins after sold out answer 412 SOLD_OUT; onSaleAt cannot
//     move once the queue was shuffled. Positions are rank minus the
//     admission cursor (an upper bound: expired entries ahead still count).
//   - API registrations are accepted on open ticket types only (412
//     otherwise); sale windows apply to orders, not to API registrations.
//     A ticket type requiring approval makes API registrations pending
//     (holding no place); purchased admissions are confirmed at once.
//   - Pass tokens are "<eventId>.<32 Crockford chars>" and passUrl is
//     BaseURL + "/pass/" + token; EventIDFromPassToken routes them.
//   - Check-ins at the event door ignore subjectId (one door per event);
//     session and venue doors need subjectId. A repeat at a door answers the
//     first check-in with alreadyCheckedIn true even if the registration was
//     cancelled since; a first check-in needs status confirmed.
//   - Lists: ticket types, add-ons, bundles and codes in creation order;
//     registrations, check-ins and orders newest first. Cursors are
//     base64url of the last id of the page.
//   - Cancelling a rejected registration is allowed (it held nothing);
//     cancelling a cancelled one is 412. A freed place (cancel, capacity
//     raised, hold released) seats the oldest waitlisted registrations
//     of that type at once, with a WaitlistSeated change (waitlist.go).
//     "Oldest" is by entry into the waitlist (an application approved into
//     a full type queues behind those already waiting), kept as WaitSeq.
//   - Capacity is never lowered below the places already taken
//     (confirmed or sold, plus held): 412.
//
// # Commerce decisions
//
//   - Orders need a published event (412 otherwise, archived included);
//     the ticket type must be open and inside its sale window, add-ons and
//     bundles open. A hidden type (isPublic false), alone or inside a
//     bundle, needs a redemptionCode of that type, on every surface (412
//     without it on the Developer API). On the storefront an item the
//     buyer cannot see (draft, or a hidden type or a bundle holding one
//     that the order's code does not unlock) answers the 400 of an id
//     that does not exist, so ids cannot be probed.
//   - A checkout session is checked at creation by the same code as order
//     placement (orderItems: code, items, admissions, sale windows,
//     visibility; and the promotion code covering a line), so the hosted
//     page is never handed a session it cannot place; only capacity is
//     left to placement, since a session holds nothing. An invalid code in an order is a 400 on redemptionCode;
//     a code must unlock the order's admission type. A code grants access,
//     never a place.
//   - One order admits one person: at most one admission in total, directly
//     or through a bundle; add-on lines may have quantity 1..100. A bundle
//     holds its own capacity and the capacity of its contents.
//   - Already registered buyer (an active registration with that email) with
//     an admission in the order: the order is still recorded (so it has an
//     orderNumber and orderUrl), holds nothing, is born "cancelled" with
//     alreadyRegistered true and registrationId the existing registration.
//     If the buyer got registered between placement and payment, the order
//     is paid with alreadyRegistered true, its admission place returns, and
//     no second registration is created (refund is a console matter).
//   - Holds: an order holds for Config.OrderHold from placement; confirming a
//     paid order starts a payment and extends the hold by another OrderHold.
//     Expire lapses open and awaiting_payment orders whose deadline passed.
//     Confirm after the deadline (before Expire ran) is 412.
//   - Confirm: free -> paid and fulfilled at once; paid -> awaiting_payment
//     with paymentId "pay_<event suffix>.<20 chars>" and paymentUrl
//     BaseURL/pay/<paymentId>. On the Developer API (ConfirmOrder.Storefront
//     false) successUrl and cancelUrl are required for paid orders; given
//     URLs (and a checkout session's returnUrl) must be https, http only
//     for loopback hosts, and on the storefront lie at one of the
//     publishable key's origins, which the shell passes in the command
//     (redirect.go: one rule, so no page is an open redirect). Confirming an
//     awaiting_payment, paid or already-registered order answers it as is.
//   - SettlePayment: "failed" changes nothing (the order stays
//     awaiting_payment until its hold lapses, so the buyer may retry); a
//     repeated delivery or a second success on a paid order changes nothing;
//     a wrong amount or currency is 412. A success for an expired or
//     cancelled order is a late payment (latepay.go), never dropped: an
//     expired order whose places, code and promotion code can still be taken
//     takes them back (order.retaken) and is paid and fulfilled as usual;
//     otherwise the whole payment is refunded (a RefundRequested of the
//     total, full, the order keeping its status and showing the refund).
//   - Fulfilment emits OrderPaid (holds become sales, the admission becomes
//     a confirmed registration with orderId) and TicketIssued listing the
//     registrations whose pass email should be sent. Every confirmation
//     (API registration confirmed at once, approval, order fulfilment)
//     emits TicketIssued; seating from the waitlist emits WaitlistSeated.
//   - Cancel of a paid order is 412 (refunds are in the console); cancel of
//     a cancelled or expired order answers it unchanged.
//   - Code uses count fulfilled uses plus uses reserved by live orders; a
//     reservation returns when the order lapses, a use when its
//     registration is cancelled. Statuses: disabled, expired, exhausted,
//     active, in that precedence. Lookup answers NotFound for every invalid
//     form (also when the code's type is archived); the discounted price
//     is the price under the lookup's promotionCode, if any (see Organizer
//     content); perks are empty until the program feature fills them.
//   - URLs: orderUrl BaseURL/orders/<orderNumber>; checkoutUrl (open
//     orders) BaseURL/orders/<orderNumber>/checkout; checkout session url
//     BaseURL/checkout/<sessionId>.
//   - Ids embedding the event (event ids must start with "evt_"):
//     orderNumber "<event id without evt_>-<8 chars>", checkout session
//     "cs_<suffix>.<24 chars>", payment "pay_<suffix>.<20 chars>", pass token
//     "<event id>.<32 chars>"; see EventIDFromOrderNumber,
//     EventIDFromCheckoutSession, EventIDFromPayment, EventIDFromPassToken.
//   - GetCatalog is the storefront's view: published events only (NotFound
//     otherwise), public open types inside their window with soldOut,
//     upcoming ones (opensAt in the future), open add-ons and bundles
//     (bundles with a hidden type are left out).
//   - The storefront never shows a count of places: its views (GetCatalog,
//     LookupStorefrontCode; storefront.go) say availability as a state
//     (available, waitlist, sold_out, upcoming, closed) and soldOut.
//
// # Program and perks (program.go, program_views.go)
//
//   - Venues, sessions, speakers, sponsors and perks are console records
//     with create/get/update/delete; writes on an archived event are 412.
//     Unknown referenced ids (perks, venue, sessions, registration) are
//     400 on the field ("perkIds[1]"); a session ends after it starts.
//   - Deletes detach references instead of refusing: a deleted perk leaves
//     every gate, binding and grant; a deleted venue leaves its sessions
//     without a venue; a deleted session leaves speakers' sessionIds.
//   - The agenda (SessionOrder) is kept in time order (start, end, title,
//     id). Moving the event's start while sessions exist is 412 until
//     confirmAgendaReset; the reset clears sessions and speakers' sessionIds.
//   - Effective perks of a registration: its ticket type's bindings, its
//     admitting code's bindings (orders record the code; API registrations
//     have none) and its grants, each perk with its sources. A code lookup
//     shows the code's perks plus its ticket type's.
//   - Doors: a session's gate is its perks plus its venue's; a venue's gate
//     its perks; empty is open to all. A session or venue check-in needs an
//     existing subjectId (400); the result carries an advisory Access
//     verdict, recomputed on a repeat scan. The only hard stop stays "not
//     confirmed".
//   - Attendees: one entry per normalized email in order of first
//     registration, standing status confirmed > waitlisted > pending >
//     cancelled > rejected.
//
// # Organizer content (content.go, forms.go, promocodes.go, translations.go)
//
// What the organizer sets up for selling an event beyond its ticket
// types; edited from the web console and the admin API, hence once named
// "console".
//
//   - Registration forms, per ticket type: typed questions (text, email,
//     phone, select, multi_select, checkbox, date; id, label, required,
//     options for the selects). PUT writes the draft, publish copies it to
//     the published version; status is published while the two are equal.
//     Only published questions reach the catalog (ticketTypes[].questions)
//     and the hosted checkout, and only they check responses.
//   - Responses on orders are checked against the published form of the
//     order's admission (unknown question, missing required, wrong type,
//     option not allowed, bad email, phone or YYYY-MM-DD date: 400 on
//     "responses.<id>"); without a published form they stay free-form. A
//     checkout session checks the answers it is given but not the missing
//     required ones (the hosted page collects them). Registrations show
//     their order's responses.
//   - Promotion codes: exactly one of percentOff (1..100) and amountOff
//     (minor units per unit); appliesTo lists ticket types, add-ons and
//     bundles, all empty meaning every item; code text unique per event
//     (upper-cased). A percent discount is amount*percent/100 rounded half
//     up, per line; an amount is min(amountOff, unit price) per unit, so a
//     line never goes below zero. Lines and total are stored discounted
//     and the order records the code and discountAmount. A code covering
//     no line of the order is 400. Statuses disabled, expired, exhausted,
//     active, in that precedence; any but active is 400 on promotionCode
//     (orders of both surfaces, checkout sessions, lookups). Uses count
//     like redemption codes: a live order holds one, expiry or cancel
//     returns it, payment spends it, a full refund gives it back. Code and
//     discount are fixed at creation; DELETE disables.
//   - Site: SetSite sets siteUrl (absolute https, http only for localhost)
//     and the event's description (null until set); null clears.
//   - Translations per BCP 47 tag, stored in canonical case (zh-CN): name
//     and description of the event, ticket types, add-ons, bundles and
//     sessions (a session's name translates its title). GetCatalog{Lang}
//     and GetLocalizedEvent{Lang} fall back per field to the default; an
//     unknown or absent lang falls back entirely, never an error. Unknown
//     ids in a translation are 400 on "ticketTypes.<id>".
//   - Byte format: the content changes (form.saved, promotion_code.saved,
//     translation.saved) carry the time and then their fields as one JSON
//     document; event.description_set is binary. The snapshot's last
//     section is the organizer content: a byte 0 when empty, else version
//     byte 1 and the OrganizerContent as JSON. order.placed and the order record append
//     the promotion code id and discount.
//
// # Refunds (refunds.go)
//
//   - Policy (admin API and web console, SetRefundPolicy): refundable, a
//     deadline (an instant) or hoursBeforeStart (counted back from the
//     event's start; no start, no deadline), feePercent of the order
//     total kept once per order, rounded down in the buyer's favour. Until
//     the organizer sets one the policy is refundable, no deadline, no fee. The policy binds refunds
//     at the moment they are requested (412 naming the rule); force
//     overrides all three rules, the fee included. Changing the policy
//     never touches refunds already made.
//   - A refund is three steps and the actor is never held across the
//     provider call: RequestRefund validates (order paid, not free, amount
//     > 0 and <= what is refundable: total less refunds succeeded or
//     pending, less the fee unless forced; at most 20 refunds an order)
//     and logs RefundRequested with a fresh refund id; the shell asks the
//     provider (payments.Provider.Refund, keyed by refund id); CompleteRefund
//     logs RefundSettled succeeded or failed. A failed refund returns
//     nothing and the order may be refunded again.
//   - A refund is full when its amount is everything still refundable
//     (the default). A succeeded full refund makes the order "refunded":
//     its own registration is cancelled (place freed, redemption-code use
//     returned, waitlist seated, reason "refunded"), add-on and bundle
//     sales return to stock and its promotion-code use returns. A partial
//     refund leaves the order "paid", keeping place and uses; the order's
//     refunds[] (id, amount, reason, status, full, force, error,
//     requestedAt, at) say what went back.
//   - Idempotence: while an order has a pending refund, RequestRefund
//     answers that refund and logs nothing, so a retry after a crash or a
//     lost provider answer resumes it with the same refund id (the
//     provider pays a refund id out once); completing a settled refund
//     changes nothing; a refunded order is 412. A RefundRequested left
//     without outcome by a restart is resolved by the console repeating
//     the request (POST .../refund); the sandbox provider refunds at once.
//   - A paid or refunded order is not cancelled through the API (412,
//     "refunds are made in the console"); a repeated payment webhook of a
//     refunded order changes nothing.
//
// # Hosted checkout sessions
//
// An order placed from a checkout session is recorded on the session
// (CheckoutRec.OrderID). While that order is open, awaiting payment, paid
// or refunded, placing again from the session answers it and changes
// nothing, so a double submit of the hosted page holds no second place;
// once it is cancelled or expired the session may place again.
//
// A session that never placed an order is purged (checkoutpurge.go) once
// it has been expired for Config.CheckoutSessionKeep (24h): the timer's
// Expire emits CheckoutSessionsPurged (the ids, at most 1000 a change), so
// replay and snapshots drop exactly what the live machine dropped and the
// state no longer grows with every session ever created. A session with
// an order is kept (the order names it). What a session id answers:
//
//   - open until ExpiresAt; then expired on every surface: the hosted
//     checkout shows status expired (the page: 410 "this checkout link has
//     expired" with its returnUrl as the way back), an order placed from it
//     412 CHECKOUT_SESSION_EXPIRED, its waitlist 412 WAITLIST_NOT_OFFERED;
//   - purged: the same answers (the page without the way back and in the
//     visitor's language, which went with the record). The core cannot tell
//     a purged id from a forged one of the same form ("cs_<event>.<24
//     Crockford chars>", 120 random bits), so every unknown id of that form
//     answers as expired; a malformed id is 404 "checkout session not
//     found". GetCheckoutSession (no HTTP route) answers 404 for a purged id:
//     its record is gone. Keeping a tombstone per purged id to tell them
//     apart would itself grow without bound.
//
// # Byte formats
//
// A change (MarshalChange, codec.go; each kind's appendBody and decoder):
// version byte 1, a kind length byte, the kind ("order.placed", its
// ChangeKind, registered in registry.go) and the change's fields in a
// compact binary form (varints, length-prefixed strings, Unix-nanosecond
// times). A snapshot (MarshalState, statecodec.go): version byte 2, the
// event id, the event record and one section per collection in creation
// order, every record length-prefixed. Fields and sections are only ever
// appended, and readers treat missing trailing fields as zero values, so
// old logs and snapshots stay readable; unknown versions are errors. JSON
// tags on changes and State are for debugging output and the version 1
// JSON snapshot, which is still read.
//
// # Performance notes
//
// Decoding takes strings as substrings of one allocation per change or
// snapshot. Snapshot loading puts each section's records in one slab,
// presizes maps and leaves the check-in code and pass token indexes to
// their first use (a replay does too). Expire and NextDeadline visit only
// holding orders. The e-mail index lists every registration of an email
// (a chain through RegOrder positions, newest first), so a list by email
// costs that email's registrations, and a list by check-in code one
// lookup, whatever the size of the event. A sold-out order is refused
// before any id is drawn, and
// its items are priced in stack buffers: the refusal allocates only its
// *Error.
//
// What the shell can call for speed (all optional, none changes a state):
//
//   - Machine.Reserve(n) before replaying n records: collections that are
//     still empty get room for n/2 records at their first record, so a
//     replay of a million changes does not rehash its maps (a map rehash
//     is a cache miss per key in a big map).
//   - Machine.ApplyRecord(rec) instead of Apply(UnmarshalChange(rec)): the
//     same result and errors, with no Change value (a registration costs
//     one copy of its record, a ticket.issued nothing).
//   - UnmarshalStateOwned(b) for a buffer the caller hands over (the one
//     snapshots.Store.LoadNewest returns): no copy of the snapshot.
//   - DecodeState(b, DecodeOptions{Owned, Run}) with a Runner that runs
//     independent tasks concurrently: the record chunks of the large
//     sections, then the maps and indexes (the package starts no goroutine;
//     the shell's Runner does). A load also leaves the registrations by id
//     to their first use (State.regs) when their ids increase and nothing
//     in the load needs them, and fills the e-mail index in two shards.
//   - AppendChange(buf, ch) to reuse one encode buffer per batch.
//
// Memory: registrations and orders come from slabs (chunks of 4 to 512
// records, see slab), and the state keeps the records of RegOrder,
// OrderOrder and CheckinOrder in lists beside the maps (State.mem), so
// MarshalState, reindex and the snapshot checks walk records in memory
// order instead of looking each up by id. Records are never removed, so
// the lists stay aligned with the id slices. MarshalState sizes its buffer
// from a sample of each big section. Figures (BenchmarkReplayLog,
// BenchmarkSnapshot1M, BenchmarkHotPath, persistence.BenchmarkRecoverEvent)
// are in the commit messages.
package event
