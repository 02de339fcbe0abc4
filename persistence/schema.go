package persistence

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble/v2"
)

// The prefixes of index keys ('x' namespace), one per kind of entry. Each
// is defined here and nowhere else: its owner (the package that writes and
// reads the entries, and whose doc.go gives their value format) takes it
// from here, and Schema lists it with its key format, so one place says
// what the store may hold and CheckSchema can hold the store to it.
const (
	PrefixEventIndex     = "ev/"             // actors/index: event id -> owning unit id
	PrefixEventPublished = "evpub/"          // actors/index: published events, for the catalogue
	PrefixFeed           = "feed/"           // actors/feed: the change feed
	PrefixMailInbox      = "mail/"           // mail: mail owed, not tried yet
	PrefixMailByOrder    = "mailorder/"      // mail: the mail index by order
	PrefixHookInbox      = "hook/"           // webhooks: webhook events owed, not fanned out yet
	PrefixRefund         = "refund/"         // payments: durably pending refunds
	PrefixCheckoutClose  = "checkout-close/" // payments: hosted payment pages to close
	PrefixProviderEvent  = "provider-event/" // payments: provider webhook events acted on
	PrefixOutbox         = "obx/"            // outbox: tried entries and their due index
	PrefixHookEndpoint   = "whep/"           // webhooks: endpoints
	PrefixHookLog        = "whlog/"          // webhooks: delivery log
	PrefixHookTask       = "whq/"            // webhooks: tasks of earlier versions
	PrefixHookPending    = "whpend/"         // webhooks: per-endpoint pending counts
	PrefixWalletDevice   = "wdev/"           // wallet: Apple device registrations by device
	PrefixWalletPass     = "wreg/"           // wallet: the same, by pass
	PrefixWalletGoogle   = "wgoo/"           // wallet: Google Wallet save links made
	PrefixSession        = "csess/"          // http/console: shared console sessions
	PrefixSessionSeen    = "csessseen/"      // http/console: their last use
	PrefixSessionEnd     = "csessend/"       // http/console: sign-outs everywhere
	PrefixSecret         = "secret/"         // app: secrets made once for a cluster
	PrefixClusterPos     = "clusterpos/"     // cluster: position of the shared index copy
	PrefixIdempotency    = "idem/"           // http, actors, outbox, webhooks: Idempotency-Key answers
	PrefixAudit          = "audit/"          // audit: the audit log
)

// KeyFormat is one entry of the key schema: index keys that start with
// Prefix belong to Owner and have the shape Format.
type KeyFormat struct {
	Prefix string
	Owner  string
	Format string
}

// Schema is every kind of index key the service writes. Keep it in step
// with the constants above and the schema section of doc.go.
var Schema = []KeyFormat{
	{PrefixEventIndex, "actors/index", "ev/<eventId> -> unit id"},
	{PrefixEventPublished, "actors/index", "evpub/<eventId> -> 1 byte: published"},
	{PrefixFeed, "actors/feed", "feed/<eventId>/<16 hex feed seq> -> change feed entry"},
	{PrefixMailInbox, "mail", "mail/<eventId or \"directory\">/<16 hex log seq>-<4 hex i> -> mail.TicketMail JSON"},
	{PrefixMailByOrder, "mail", "mailorder/<eventId>/<orderId>/<16 hex seq>-<4 hex i> -> mail.OrderMail JSON"},
	{PrefixHookInbox, "webhooks", "hook/<eventId>/<16 hex log seq>-<4 hex i> -> webhooks.HookEvent JSON"},
	{PrefixRefund, "payments", "refund/<eventId>/<refundId> -> payments.PendingRefund JSON"},
	{PrefixCheckoutClose, "payments", "checkout-close/<eventId>/<orderId> -> payments.CheckoutToClose JSON"},
	{PrefixProviderEvent, "payments", "provider-event/<provider>/<id> -> when it was acted on"},
	{PrefixOutbox, "outbox", "obx/<queue>/s/<id> -> envelope; obx/<queue>/d/<16 hex due ns>/<id> -> empty"},
	{PrefixHookEndpoint, "webhooks", "whep/<endpointId> -> endpoint JSON"},
	{PrefixHookLog, "webhooks", "whlog/<endpointId>/<ns>-<seq> -> delivery JSON"},
	{PrefixHookTask, "webhooks", "whq/<due ns>/<endpointId>/<h> -> task of earlier versions (carried into obx/ at start)"},
	{PrefixHookPending, "webhooks", "whpend/<hook id> -> decimal count of deliveries not yet settled (cluster mode)"},
	{PrefixWalletDevice, "wallet", "wdev/<device>/<serial> -> push token"},
	{PrefixWalletPass, "wallet", "wreg/<serial>/<device> -> push token"},
	{PrefixWalletGoogle, "wallet", "wgoo/<serial> -> empty"},
	{PrefixSession, "http/console", "csess/<hash> -> session JSON (cluster mode)"},
	{PrefixSessionSeen, "http/console", "csessseen/<hash> -> last use (cluster mode)"},
	{PrefixSessionEnd, "http/console", "csessend/<memberId> -> sign-out time (cluster mode)"},
	{PrefixSecret, "app", "secret/<name> -> secret bytes (cluster mode)"},
	{PrefixClusterPos, "cluster", "clusterpos/index -> last stream sequence copied"},
	{PrefixIdempotency, "http, actors, outbox, webhooks", "idem/<scope>/<hex sha256(key)> -> the answer"},
	{PrefixAudit, "audit", "audit/<unitId>/<chunk suffix> -> version byte | s2 of the chunk's entries"},
}

// ErrSchema reports an index key no Schema entry claims, or two entries
// that claim the same keys.
var ErrSchema = errors.New("persistence: key outside the schema")

// SchemaOverlaps reports two Schema entries of which one's prefix starts
// the other's, so a key would have two owners.
func SchemaOverlaps() error {
	var errs []error
	for i, a := range Schema {
		for _, b := range Schema[i+1:] {
			if strings.HasPrefix(a.Prefix, b.Prefix) || strings.HasPrefix(b.Prefix, a.Prefix) {
				errs = append(errs, fmt.Errorf("%w: %q (%s) and %q (%s) overlap", ErrSchema, a.Prefix, a.Owner, b.Prefix, b.Owner))
			}
		}
	}
	return errors.Join(errs...)
}

// schemaOwner is the owner of index key k, "" when none.
func schemaOwner(k []byte) string {
	for _, f := range Schema {
		if strings.HasPrefix(string(k), f.Prefix) {
			return f.Owner
		}
	}
	return ""
}

// CheckSchema reads every key the store holds and reports those outside
// the schema (at most max of them): an index key no Schema entry claims,
// or a key of an unknown namespace. It reads the whole database: for
// tests and offline checks, not for a serving store.
func (s *Store) CheckSchema(max int) error {
	if err := SchemaOverlaps(); err != nil {
		return err
	}
	it, err := s.db.NewIter(&pebble.IterOptions{})
	if err != nil {
		return fmt.Errorf("persistence: check schema: %w", err)
	}
	defer it.Close()
	var errs []error
	for ok := it.First(); ok && len(errs) < max; ok = it.Next() {
		k := it.Key()
		switch {
		case len(k) == 0:
			errs = append(errs, fmt.Errorf("%w: empty key", ErrSchema))
		case k[0] == nsLog || k[0] == nsSnapshot:
			if i := strings.IndexByte(string(k[1:]), streamSep); i <= 0 {
				errs = append(errs, fmt.Errorf("%w: %q has no stream", ErrSchema, k))
			}
		case k[0] == nsIndex:
			if schemaOwner(k[1:]) == "" {
				errs = append(errs, fmt.Errorf("%w: index key %q", ErrSchema, k[1:]))
			}
		default:
			errs = append(errs, fmt.Errorf("%w: namespace %q of %q", ErrSchema, k[0], k))
		}
	}
	if err := it.Error(); err != nil {
		errs = append(errs, fmt.Errorf("persistence: check schema: %w", err))
	}
	return errors.Join(errs...)
}
