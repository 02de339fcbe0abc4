package event

import "encoding/json"

// Commands: one struct per operation. A command struct IS the JSON request
// body: the HTTP binder decodes the body straight into it and checks the `v`
// tags (see http/route.go); path parameters and shell-filled fields carry
// json:"-". Semantic checks (unknown ids, state) happen in Decide.

// CreateEvent creates the event; it is the first command of every machine.
type CreateEvent struct {
	Name     string `json:"name" v:"required,minLen=1,maxLen=200"`
	Timezone string `json:"timezone" v:"required,minLen=1,maxLen=64,format=timezone"`
	StartsAt *Time  `json:"startsAt" v:"nullable"`
	EndsAt   *Time  `json:"endsAt" v:"nullable"`
	Currency string `json:"currency,omitempty" v:"minLen=3,maxLen=3"`
}

// UpdateEvent patches the event. Status may be draft, published or archived.
type UpdateEvent struct {
	Name               Opt[string] `json:"name,omitzero" v:"minLen=1,maxLen=200"`
	Timezone           Opt[string] `json:"timezone,omitzero" v:"minLen=1,maxLen=64,format=timezone"`
	StartsAt           Opt[Time]   `json:"startsAt,omitzero" v:"nullable"`
	EndsAt             Opt[Time]   `json:"endsAt,omitzero" v:"nullable"`
	Status             Opt[string] `json:"status,omitzero" v:"enum=draft|published|archived"`
	Currency           Opt[string] `json:"currency,omitzero" v:"minLen=3,maxLen=3"`
	ConfirmAgendaReset bool        `json:"confirmAgendaReset,omitempty"`
	// WaitingRoom sets the event's waiting room (waitingroom.go); enabled
	// false turns it off.
	WaitingRoom *WaitingRoomConfig `json:"waitingRoom,omitempty" doc:"Sets the event's waiting room for a drop (decisions §19); absent fields keep their values; enabled false turns it off."`
}

// SetSiteURL sets (or with null clears) the event's public page address, a
// admin API (and web console) operation. The URL must be absolute http(s).
type SetSiteURL struct {
	SiteURL Opt[string] `json:"siteUrl" v:"nullable,format=uri,maxLen=2000"`
}

// ArchiveEvent archives the event; archive is final.
type ArchiveEvent struct{}

// GetEvent reads the event.
type GetEvent struct{}

// CreateTicketType creates a ticket type (registration type) as draft.
// IsPublic defaults to true.
type CreateTicketType struct {
	Name             string `json:"name" v:"required,minLen=1,maxLen=200"`
	Capacity         *int   `json:"capacity" v:"nullable,min=0,max=10000000"`
	PriceAmount      Money  `json:"priceAmount"`
	AllowWaitlist    bool   `json:"allowWaitlist"`
	IsPublic         *bool  `json:"isPublic"`
	RequiresApproval bool   `json:"requiresApproval"`
	OpensAt          *Time  `json:"opensAt" v:"nullable"`
	ClosesAt         *Time  `json:"closesAt" v:"nullable"`
}

// UpdateTicketType patches a ticket type, status included.
type UpdateTicketType struct {
	ID               string      `json:"-"`
	Name             Opt[string] `json:"name,omitzero" v:"minLen=1,maxLen=200"`
	Capacity         Opt[int]    `json:"capacity,omitzero" v:"nullable,min=0,max=10000000"`
	PriceAmount      Opt[Money]  `json:"priceAmount,omitzero"`
	AllowWaitlist    Opt[bool]   `json:"allowWaitlist,omitzero"`
	IsPublic         Opt[bool]   `json:"isPublic,omitzero"`
	RequiresApproval Opt[bool]   `json:"requiresApproval,omitzero"`
	OpensAt          Opt[Time]   `json:"opensAt,omitzero" v:"nullable"`
	ClosesAt         Opt[Time]   `json:"closesAt,omitzero" v:"nullable"`
	Status           Opt[string] `json:"status,omitzero" v:"enum=draft|open|closed|archived"`
}

// GetTicketType reads one ticket type.
type GetTicketType struct {
	ID string `json:"-"`
}

// ListTicketTypes lists ticket types in creation order.
type ListTicketTypes struct {
	Limit  int    `json:"-" query:"limit"`
	Cursor string `json:"-" query:"cursor"`
}

// GetAvailability reads a ticket type's availability object.
type GetAvailability struct {
	ID string `json:"-"`
}

// CreateRegistration registers a person through the Developer API.
type CreateRegistration struct {
	Email              string `json:"email" v:"required,format=email,maxLen=320"`
	Name               string `json:"name,omitempty" v:"maxLen=200"`
	RegistrationTypeID string `json:"registrationTypeId,omitempty" v:"maxLen=100"`
}

// ListRegistrations lists registrations newest first.
type ListRegistrations struct {
	Status string `json:"-" query:"status" v:"enum=pending|confirmed|waitlisted|rejected|cancelled"`
	Email  string `json:"-" query:"email" v:"maxLen=320"`
	// CheckinCode keeps the registration with that check-in code, in any
	// case: one lookup, whatever the size of the event. The console's
	// door search sets it; it has no query tag, so the Developer API's
	// list is unchanged.
	CheckinCode string `json:"-" v:"maxLen=64"`
	Limit       int    `json:"-" query:"limit"`
	Cursor      string `json:"-" query:"cursor"`
}

// GetRegistration reads one registration.
type GetRegistration struct {
	ID string `json:"-"`
}

// ApproveRegistration decides a pending application positively.
type ApproveRegistration struct {
	ID string `json:"-"`
}

// RejectRegistration decides a pending application negatively.
type RejectRegistration struct {
	ID     string `json:"-"`
	Reason string `json:"reason,omitempty" v:"maxLen=1000"`
}

// CancelRegistration cancels a registration and releases its place.
type CancelRegistration struct {
	ID string `json:"-"`
}

// RotatePass issues a new pass token; the old pass link stops working.
type RotatePass struct {
	ID string `json:"-"`
}

// GetPass finds a registration by its pass token (the hosted pass page).
type GetPass struct {
	Token string `json:"-"`
}

// RecordCheckin records a check-in at a door, by registration id or by
// check-in code (exactly one of the two).
type RecordCheckin struct {
	RegistrationID string `json:"registrationId,omitempty" v:"minLen=1,maxLen=100"`
	CheckinCode    string `json:"checkinCode,omitempty" v:"minLen=1,maxLen=100"`
	SubjectType    string `json:"subjectType" v:"required,enum=event|session|venue"`
	SubjectID      string `json:"subjectId,omitempty" v:"maxLen=100"`
	Method         string `json:"method,omitempty" v:"enum=scan|manual"`
}

// ListCheckins lists check-ins newest first.
type ListCheckins struct {
	SubjectType    string `json:"-" query:"subjectType" v:"enum=event|session|venue"`
	SubjectID      string `json:"-" query:"subjectId" v:"maxLen=100"`
	RegistrationID string `json:"-" query:"registrationId" v:"maxLen=100"`
	Limit          int    `json:"-" query:"limit"`
	Cursor         string `json:"-" query:"cursor"`
}

// MintCodes mints redemption codes for a ticket type. A custom Code forces
// Count to 1. MaxUses absent means 1, null means unlimited.
type MintCodes struct {
	RegistrationTypeID string   `json:"registrationTypeId" v:"required,minLen=1,maxLen=100"`
	Count              int      `json:"count,omitempty" v:"min=1,max=1000"`
	Code               string   `json:"code,omitempty" v:"minLen=1,maxLen=64"`
	Label              string   `json:"label,omitempty" v:"maxLen=200"`
	MaxUses            Opt[int] `json:"maxUses,omitzero" v:"nullable,min=1,max=1000000"`
	ExpiresAt          *Time    `json:"expiresAt" v:"nullable"`
}

// ListCodes lists redemption codes in mint order.
type ListCodes struct {
	Limit  int    `json:"-" query:"limit"`
	Cursor string `json:"-" query:"cursor"`
}

// LookupCode validates a buyer's code.
type LookupCode struct {
	Code string `json:"-" query:"code" v:"required,minLen=1,maxLen=64"`
	// PromotionCode, when given, prices discountedPriceAmount (promocodes.go).
	PromotionCode string `json:"-" query:"promotionCode" v:"maxLen=64"`
}

// DisableCode disables a redemption code.
type DisableCode struct {
	ID string `json:"-"`
}

// CreateAddon creates an add-on as draft.
type CreateAddon struct {
	Name        string `json:"name" v:"required,minLen=1,maxLen=200"`
	PriceAmount Money  `json:"priceAmount"`
	Capacity    *int   `json:"capacity" v:"nullable,min=0,max=10000000"`
}

// UpdateAddon patches an add-on, status included.
type UpdateAddon struct {
	ID          string      `json:"-"`
	Name        Opt[string] `json:"name,omitzero" v:"minLen=1,maxLen=200"`
	PriceAmount Opt[Money]  `json:"priceAmount,omitzero"`
	Capacity    Opt[int]    `json:"capacity,omitzero" v:"nullable,min=0,max=10000000"`
	Status      Opt[string] `json:"status,omitzero" v:"enum=draft|open|closed|archived"`
}

// GetAddon reads one add-on.
type GetAddon struct {
	ID string `json:"-"`
}

// ListAddons lists add-ons in creation order.
type ListAddons struct {
	Limit  int    `json:"-" query:"limit"`
	Cursor string `json:"-" query:"cursor"`
}

// BundleItem is one line of a bundle's contents.
type BundleItem struct {
	ItemType string `json:"itemType" v:"required,enum=registration_type|addon"`
	ItemID   string `json:"itemId" v:"required,minLen=1,maxLen=100"`
	Quantity int    `json:"quantity" v:"required,min=1,max=100"`
}

// CreateBundle creates a bundle as draft.
type CreateBundle struct {
	Name        string       `json:"name" v:"required,minLen=1,maxLen=200"`
	PriceAmount Money        `json:"priceAmount"`
	Capacity    *int         `json:"capacity" v:"nullable,min=0,max=10000000"`
	Items       []BundleItem `json:"items" v:"maxItems=50"`
}

// UpdateBundle patches a bundle, status and items included.
type UpdateBundle struct {
	ID          string            `json:"-"`
	Name        Opt[string]       `json:"name,omitzero" v:"minLen=1,maxLen=200"`
	PriceAmount Opt[Money]        `json:"priceAmount,omitzero"`
	Capacity    Opt[int]          `json:"capacity,omitzero" v:"nullable,min=0,max=10000000"`
	Status      Opt[string]       `json:"status,omitzero" v:"enum=draft|open|closed|archived"`
	Items       Opt[[]BundleItem] `json:"items,omitzero" v:"maxItems=50"`

	// bareItems is set when the items come from a PUT array body, so error
	// details name "[0].itemId" rather than "items[0].itemId".
	bareItems bool
}

// GetBundle reads one bundle.
type GetBundle struct {
	ID string `json:"-"`
}

// ListBundles lists bundles in creation order.
type ListBundles struct {
	Limit  int    `json:"-" query:"limit"`
	Cursor string `json:"-" query:"cursor"`
}

// ReplaceBundleItems replaces a bundle's whole contents. The HTTP body is
// the array itself; the handler puts it in Items.
type ReplaceBundleItems struct {
	ID    string       `json:"-"`
	Items []BundleItem `json:"-"`
}

// OrderItem is one requested line of an order or checkout session.
type OrderItem struct {
	ItemType string `json:"itemType" v:"required,enum=registration_type|addon|bundle"`
	ItemID   string `json:"itemId" v:"required,minLen=1,maxLen=100"`
	Quantity int    `json:"quantity" v:"required,min=1,max=100"`
}

// PlaceOrder places an order and holds its places for Config.OrderHold.
// Storefront is set by the shell for storefront calls (json:"-"); the rules
// are the same on both surfaces, except that on the storefront an item the
// buyer cannot see (draft, or hidden and not unlocked by the order's
// redemption code) answers as an unknown id.
type PlaceOrder struct {
	Email          string          `json:"email" v:"required,format=email,maxLen=320"`
	Name           string          `json:"name,omitempty" v:"maxLen=200"`
	Items          []OrderItem     `json:"items" v:"required,minItems=1,maxItems=50"`
	RedemptionCode string          `json:"redemptionCode,omitempty" v:"minLen=1,maxLen=64"`
	PromotionCode  string          `json:"promotionCode,omitempty" v:"minLen=1,maxLen=64"`
	Responses      json.RawMessage `json:"responses,omitempty"`
	Storefront     bool            `json:"-"`
	// CheckoutSessionID is set by the hosted checkout page: the order
	// remembers its session (returnUrl, locale), and an expired session
	// places nothing.
	CheckoutSessionID string `json:"-"`
	// Client is the shell's opaque id of the storefront caller (its
	// publishable key and address) that the hold limits count by
	// (holdlimits.go); empty on the Developer API.
	Client string `json:"-"`
	// QueueToken is the request's Queue-Token header: from a waiting
	// room's onSaleAt a storefront order needs one (waitingroom.go).
	QueueToken string `json:"-"`
}

// ConfirmOrder confirms an open order: a free one is paid and fulfilled at
// once, a paid one awaits payment. Ref is the order id or order number.
// On the Developer API (Storefront false) a paid order needs both URLs;
// given URLs must be absolute https (http for loopback hosts), and on the
// storefront at one of Origins (see checkRedirect).
type ConfirmOrder struct {
	Ref        string `json:"-"`
	Storefront bool   `json:"-"`
	// Origins are the publishable key's origins, set by the shell for
	// storefront calls: the core never looks keys up.
	Origins    []string `json:"-"`
	SuccessURL string   `json:"successUrl,omitempty" v:"format=uri,maxLen=2000"`
	CancelURL  string   `json:"cancelUrl,omitempty" v:"format=uri,maxLen=2000"`
	// Prepare, Renew and Provider are set by the shell when a hosted
	// provider makes the payment page (provider.go): Prepare checks the
	// confirm and keeps its parameters the first time (Renew: anew);
	// Provider records the page the shell created.
	Prepare  bool              `json:"-"`
	Renew    bool              `json:"-"`
	Provider *ProviderCheckout `json:"-"`
}

// CancelOrder releases an order's hold now; cancelling again is a no-op.
type CancelOrder struct {
	Ref string `json:"-"`
}

// GetOrder reads an order by id or order number.
type GetOrder struct {
	Ref string `json:"-"`
}

// ListOrders lists orders newest first.
type ListOrders struct {
	Status string `json:"-" query:"status" v:"enum=open|awaiting_payment|paid|cancelled|expired|refunded"`
	Email  string `json:"-" query:"email" v:"maxLen=320"`
	// Name keeps orders whose buyer name contains it, ignoring case. The
	// console's search sets it; it has no query tag, so the Developer
	// API's list is unchanged.
	Name   string `json:"-" v:"maxLen=200"`
	Limit  int    `json:"-" query:"limit"`
	Cursor string `json:"-" query:"cursor"`
}

// SettlePayment is built by the payment webhook handler (never decoded from
// a client body). Outcome is "succeeded" or "failed".
type SettlePayment struct {
	PaymentID  string `json:"-"`
	Amount     Money  `json:"-"`
	Currency   string `json:"-"`
	DeliveryID string `json:"-"`
	Outcome    string `json:"-"`
	// OrderRef names the order (its number) when PaymentID is empty, and
	// ProviderRef the provider's payment (a Checkout Session id) that
	// succeeded: a hosted provider's webhook names the order, not the
	// service's payment id (provider.go).
	OrderRef    string `json:"-"`
	ProviderRef string `json:"-"`
}

// CreateCheckoutSession creates a hosted checkout session. It holds no seat.
type CreateCheckoutSession struct {
	Items          []OrderItem     `json:"items" v:"required,minItems=1,maxItems=50"`
	Email          string          `json:"email,omitempty" v:"format=email,maxLen=320"`
	Name           string          `json:"name,omitempty" v:"maxLen=200"`
	Responses      json.RawMessage `json:"responses,omitempty"`
	RedemptionCode string          `json:"redemptionCode,omitempty" v:"minLen=1,maxLen=64"`
	PromotionCode  string          `json:"promotionCode,omitempty" v:"minLen=1,maxLen=64"`
	ReturnURL      string          `json:"returnUrl,omitempty" v:"format=uri,maxLen=2000"`
	Locale         string          `json:"locale,omitempty" v:"enum=en|zh-CN"`
	// Storefront is set by the shell for storefront calls: items the
	// buyer cannot see answer as unknown ids (see PlaceOrder), and
	// returnUrl must be at one of Origins, the publishable key's origins
	// (see ConfirmOrder).
	Storefront bool     `json:"-"`
	Origins    []string `json:"-"`
	// Client is the storefront caller's id (see PlaceOrder.Client).
	Client string `json:"-"`
	// QueueToken is the request's Queue-Token header (see PlaceOrder);
	// the session keeps it for the order its hosted page places.
	QueueToken string `json:"-"`
}

// GetCheckoutSession reads a checkout session by id.
type GetCheckoutSession struct {
	ID string `json:"-"`
}

// GetCatalog reads what a storefront sales page needs: the published event
// with its public ticket types (soldOut, never a count), upcoming types,
// add-ons and bundles on sale. An unpublished event is NotFound.
type GetCatalog struct {
	// Lang picks a translation (translations.go); unknown falls back to the default.
	Lang string `json:"-" query:"lang" v:"maxLen=35"`
}
