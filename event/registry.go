package event

import (
	"fmt"
	"reflect"
)

// The registry of commands. A command is declared once, in its feature
// file: its type (which is also its JSON request body), its result type
// (result) and its decide. The table below is the one list of them, with
// what Decide checks for every command of a mode; adding an operation is
// its feature-file block plus one line here. op[C, R] does not compile
// unless C declares R as its result.
var commandKinds = [...]commandKind{
	// the event, ticket types, registrations, check-ins (decide.go)
	op[CreateEvent, Event](opCreate),
	op[UpdateEvent, Event](opWrite),
	op[ArchiveEvent, Event](opWrite),
	op[SetSiteURL, Event](opWrite),
	op[GetEvent, Event](opRead),
	op[SetLocation, Location](opEdit), // location.go
	op[GetLocation, Location](opRead),
	op[CreateTicketType, TicketType](opWrite),
	op[UpdateTicketType, TicketType](opWrite),
	op[GetTicketType, TicketType](opRead),
	op[ListTicketTypes, List[TicketType]](opRead),
	op[GetAvailability, Availability](opRead),
	op[CreateRegistration, RegistrationResult](opWrite),
	op[ListRegistrations, List[Registration]](opRead),
	op[GetRegistration, Registration](opRead),
	op[ApproveRegistration, Registration](opWrite),
	op[RejectRegistration, Registration](opWrite),
	op[CancelRegistration, Registration](opWrite),
	op[RotatePass, Registration](opWrite),
	op[GetPass, Pass](opRead),
	op[RecordCheckin, CheckinResult](opWrite),
	op[ListCheckins, List[Checkin]](opRead),
	// the door kit (door.go)
	op[RecordScans, ScanResults](opWrite),
	op[ListPasses, PassPage](opRead),
	op[GetDoorEvent, DoorEvent](opRead),
	op[CheckDoors, DoorList](opRead),
	op[ListDoorConflicts, List[DoorConflict]](opRead),
	op[GetPayment, Order](opRead),
	op[ReadFeed, FeedPage](opRead), // feed.go: the shell serves it
	// codes, add-ons, bundles, orders, checkout (commerce.go)
	op[Expire, any](opTick),
	op[MintCodes, MintResult](opWrite),
	op[ListCodes, List[RedemptionCode]](opRead),
	op[LookupCode, CodeLookup](opRead),
	op[LookupStorefrontCode, StorefrontCodeLookup](opRead),
	op[ResendTicket, TicketResend](opWrite),
	op[JoinWaitlist, RegistrationResult](opWrite),
	op[DisableCode, RedemptionCode](opWrite),
	op[CreateAddon, Addon](opWrite),
	op[UpdateAddon, Addon](opWrite),
	op[GetAddon, Addon](opRead),
	op[ListAddons, List[Addon]](opRead),
	op[CreateBundle, Bundle](opWrite),
	op[UpdateBundle, Bundle](opWrite),
	op[ReplaceBundleItems, Bundle](opWrite),
	op[GetBundle, Bundle](opRead),
	op[ListBundles, List[Bundle]](opRead),
	op[PlaceOrder, Order](opWrite),
	op[ConfirmOrder, Order](opWrite),
	op[CancelOrder, Order](opWrite),
	op[GetOrder, Order](opRead),
	op[ListOrders, List[Order]](opRead),
	op[SettlePayment, Order](opWrite),
	op[CreateCheckoutSession, CheckoutSession](opWrite),
	op[GetCheckoutSession, CheckoutSession](opRead),
	op[GetCatalog, Catalog](opRead),
	op[GetHostedCheckout, HostedCheckout](opRead),
	op[GetHostedOrder, HostedOrder](opRead),
	// refunds (refunds.go)
	op[GetRefundPolicy, RefundPolicy](opRead),
	op[GetDashboard, Dashboard](opRead),
	op[SetRefundPolicy, RefundPolicy](opWrite),
	op[RequestRefund, RefundStart](opWrite),
	op[CompleteRefund, Order](opWrite),
	// the program (program.go)
	op[CreateVenue, Venue](opEdit),
	op[UpdateVenue, Venue](opEdit),
	op[GetVenue, Venue](opRead),
	op[ListVenues, List[Venue]](opRead),
	op[DeleteVenue, Venue](opEdit),
	op[CreateSession, Session](opEdit),
	op[UpdateSession, Session](opEdit),
	op[GetSession, Session](opRead),
	op[ListSessions, List[Session]](opRead),
	op[DeleteSession, Session](opEdit),
	op[CreateSpeaker, Speaker](opEdit),
	op[UpdateSpeaker, Speaker](opEdit),
	op[GetSpeaker, Speaker](opRead),
	op[ListSpeakers, List[Speaker]](opRead),
	op[DeleteSpeaker, Speaker](opEdit),
	op[CreateSponsor, Sponsor](opEdit),
	op[UpdateSponsor, Sponsor](opEdit),
	op[GetSponsor, Sponsor](opRead),
	op[ListSponsors, List[Sponsor]](opRead),
	op[DeleteSponsor, Sponsor](opEdit),
	op[CreatePerk, Perk](opEdit),
	op[UpdatePerk, Perk](opEdit),
	op[GetPerk, Perk](opRead),
	op[ListPerks, List[Perk]](opRead),
	op[DeletePerk, Perk](opEdit),
	op[SetTicketTypePerks, PerkBinding](opEdit),
	op[SetCodePerks, PerkBinding](opEdit),
	op[ListPerkBindings, PerkBindings](opRead),
	op[GrantPerk, PerkGrantResult](opEdit),
	op[RevokePerk, PerkGrantResult](opEdit),
	op[GetRegistrationPerks, RegistrationPerks](opRead),
	op[ListAttendees, List[Attendee]](opRead),
	// the organizer's content (forms.go, promocodes.go, translations.go, content.go)
	op[PutForm, RegistrationForm](opEdit),
	op[GetForm, RegistrationForm](opRead),
	op[PublishForm, RegistrationForm](opEdit),
	op[CreatePromotionCode, PromotionCode](opEdit),
	op[UpdatePromotionCode, PromotionCode](opEdit),
	op[GetPromotionCode, PromotionCode](opRead),
	op[ListPromotionCodes, List[PromotionCode]](opRead),
	op[DeletePromotionCode, PromotionCode](opEdit),
	op[SetSite, Event](opEdit),
	op[PutTranslation, Translation](opEdit),
	op[GetTranslation, Translation](opRead),
	op[ListTranslations, List[Translation]](opRead),
	op[DeleteTranslation, Translation](opEdit),
	op[GetLocalizedEvent, Event](opRead),
	// the waiting room (waitingroom.go)
	op[JoinQueue, QueueStatus](opWrite),
	op[JoinQueues, QueueJoins](opWrite),
	op[GetQueueStatus, QueueStatus](opRead),
	op[ExpireWaiters, any](opWrite),
}

// opMode is what Decide checks before a command's own decide.
type opMode uint8

const (
	// opRead never changes anything; it is allowed on an archived event.
	opRead opMode = iota
	// opWrite may change the event; its decide checks the archived state
	// itself where that matters (cancelling a registration of an archived
	// event is allowed, creating a ticket type is not).
	opWrite
	// opEdit changes the event's setup: an archived event refuses it.
	opEdit
	// opCreate creates the event: the only command for a machine without one.
	opCreate
	// opTick is the shell's timer (Expire): nothing to do without an event.
	opTick
)

// commandKind describes one command.
type commandKind struct {
	// name is the command's Go type name (scripts and fuzzing name it).
	name   string
	mode   opMode
	typ    reflect.Type // the command
	result reflect.Type // what Decide returns for it
}

// op makes the descriptor of command C with result R.
func op[C Op[R], R any](mode opMode) commandKind {
	t := reflect.TypeFor[C]()
	return commandKind{name: t.Name(), mode: mode, typ: t, result: reflect.TypeFor[R]()}
}

// commandByType finds a command's descriptor.
var commandByType = func() map[reflect.Type]*commandKind {
	m := make(map[reflect.Type]*commandKind, len(commandKinds))
	for i := range commandKinds {
		k := &commandKinds[i]
		if _, dup := m[k.typ]; dup {
			panic(fmt.Sprintf("event: command %s registered twice", k.name))
		}
		m[k.typ] = k
	}
	return m
}()

// commandKindOf returns c's descriptor, nil for an unregistered command.
func commandKindOf(c Command) *commandKind { return commandByType[reflect.TypeOf(c)] }

// IsRead reports whether c only reads: it never changes the event, so the
// shell may answer it without logging anything. Unknown commands are not
// reads.
func IsRead(c Command) bool {
	if sc, ok := c.(storefronter); ok {
		c = sc.storefront().Cmd
	}
	k := commandKindOf(c)
	return k != nil && k.mode == opRead
}

// The registry of change kinds. A change kind is declared once, in its
// feature file: its type, its log name (ChangeKind, the binary tag written
// before the body), its body codec (decodeX and appendBody) and its effect
// on the state (apply). The table below is the one list of them; adding a
// kind is its feature-file block plus one line here. The names and body
// encodings are the log format: records written by older builds must keep
// decoding, so a name is never reused or changed.
var changeKinds = [...]changeKind{
	// the event (changes.go)
	kindOf(decodeEventCreated),
	kindOf(decodeEventUpdated),
	kindOf(decodeSiteURLSet),
	kindOf(decodeLocationSet), // location.go
	// ticket types, registrations, check-ins, codes (changes.go)
	kindOf(decodeTicketTypeCreated),
	kindOf(decodeTicketTypeUpdated),
	kindOf(decodeRegistrationCreated),
	kindOf(decodeRegistrationStatusChanged),
	kindOf(decodePassRotated),
	kindOf(decodeCheckedIn),
	kindOf(decodeScansAnswered),   // door.go
	kindOf(decodeCheckinConflict), // door.go
	kindOf(decodeScansRecorded),   // doorbatch.go
	kindOf(decodeTicketIssued).replayWith(replayTicketIssued),
	kindOf(decodeWaitlistSeated).replayWith(replayTicketIssued), // waitlist.go: the same body
	kindOf(decodeCodesMinted),
	kindOf(decodeCodeDisabled),
	// commerce (changes.go)
	kindOf(decodeAddonCreated),
	kindOf(decodeAddonUpdated),
	kindOf(decodeBundleCreated),
	kindOf(decodeBundleUpdated),
	kindOf(decodeOrderPlaced),
	kindOf(decodeOrderPaymentStarted),
	kindOf(decodeOrderConfirmPrepared), // provider.go
	kindOf(decodeOrderPaid),
	kindOf(decodeOrderReleased),
	kindOf(decodeCheckoutSessionCreated),
	kindOf(decodeCheckoutSessionsPurged), // checkoutpurge.go
	// late payments (latepay.go)
	kindOf(decodeOrderRetaken),
	// refunds (refunds.go)
	kindOf(decodeRefundPolicySet),
	kindOf(decodeRefundRequested),
	kindOf(decodeRefundSettled),
	// the program (program.go)
	kindOf(decodeVenueSaved),
	kindOf(decodeSessionSaved),
	kindOf(decodeSpeakerSaved),
	kindOf(decodeSponsorSaved),
	kindOf(decodePerkSaved),
	kindOf(decodeProgramDeleted),
	kindOf(decodePerksBound),
	kindOf(decodePerkGranted),
	// the organizer's content (forms.go, promocodes.go, translations.go, content.go)
	kindOf(decodeFormSaved),
	kindOf(decodePromoSaved),
	kindOf(decodeTranslationSaved),
	kindOf(decodeDescriptionSet),
	// the waiting room (waitingroom.go)
	kindOf(decodeWaitingRoomSet),
	kindOf(decodeQueueJoined),
	kindOf(decodeQueueShuffled),
	kindOf(decodeQueueAdmittedBatch),
	kindOf(decodeQueueTokensLapsed),
	kindOf(decodeQueueSoldOutSet),
	kindOf(decodeQueueTokenUsed),
	kindOf(decodeQueueExpiredBatch),
	kindOf(decodeQueueJoinedBatch),
}

// changeKind describes one kind of change for the codec and replay.
type changeKind struct {
	name string
	// decode reads a body into the change value.
	decode func(d *dec) Change
	// replay decodes a body and applies it without making a Change value
	// (no interface boxing on the replay path). It returns the decode
	// error, if any, before touching the state.
	replay func(s *State, d *dec, kind []byte) error
	// view: replay may read the body in place (unsafe string over the
	// record), because apply keeps nothing of it.
	view bool
}

// kindOf makes the descriptor of change type C from its body decoder; the
// name comes from C's ChangeKind, so it is written once.
func kindOf[C Change](decode func(d *dec) C) changeKind {
	var zero C
	return changeKind{
		name:   zero.ChangeKind(),
		decode: func(d *dec) Change { return decode(d) },
		replay: func(s *State, d *dec, kind []byte) error {
			c := decode(d)
			if err := d.end(kind); err != nil {
				return err
			}
			s.countDown()
			c.apply(s)
			s.FeedSeq += feedCount(c)
			s.trimHolds()
			return nil
		},
	}
}

// replayWith replaces the replay of a kind whose apply needs less than
// the decoded value; such a replay reads the record in place.
func (k changeKind) replayWith(f func(s *State, d *dec, kind []byte) error) changeKind {
	k.replay, k.view = f, true
	return k
}

// kindByName finds a change kind by its log name.
var kindByName = func() map[string]*changeKind {
	m := make(map[string]*changeKind, len(changeKinds))
	for i := range changeKinds {
		k := &changeKinds[i]
		if _, dup := m[k.name]; dup || k.name == "" || len(k.name) > 255 {
			panic(fmt.Sprintf("event: change kind %q registered twice or badly named", k.name))
		}
		m[k.name] = k
	}
	return m
}()

// RegisteredTypes returns the type of every registered command and of its
// result, for codecs that carry commands between processes by type (the
// cluster's forwarding).
func RegisteredTypes() []reflect.Type {
	out := make([]reflect.Type, 0, 2*len(commandKinds))
	for _, k := range commandKinds {
		out = append(out, k.typ, k.result)
	}
	return out
}
