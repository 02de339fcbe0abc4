package directory

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Key types.
const (
	Secret      = "secret"
	Publishable = "publishable"
)

// Unit is a business unit: the whole scope of its keys.
type Unit struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"createdAt"`
}

// Key is an API key record. Hash is set for secret keys, Token for
// publishable ones.
type Key struct {
	ID        string     `json:"id"`
	UnitID    string     `json:"unitId"`
	Type      string     `json:"type"`
	Name      string     `json:"name"`
	Hash      []byte     `json:"hash,omitempty"`
	Token     string     `json:"token,omitempty"`
	Hint      string     `json:"hint"` // last characters of the secret, for masking
	Origins   []string   `json:"origins"`
	Version   string     `json:"version"`
	CreatedAt time.Time  `json:"createdAt"`
	ExpiresAt *time.Time `json:"expiresAt"`
	RevokedAt *time.Time `json:"revokedAt"`
}

// Active reports whether k authenticates at now.
func (k *Key) Active(now time.Time) bool {
	if k.RevokedAt != nil {
		return false
	}
	return k.ExpiresAt == nil || now.Before(*k.ExpiresAt)
}

// HashSecret is the stored form of a secret key.
func HashSecret(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// Change is one directory change record. Each kind is declared once:
// its type, its log name (kind) and its apply, with one line in the
// registry (kinds).
type Change interface {
	kind() string
	apply(s *State)
}

// UnitCreated records a new business unit.
type UnitCreated struct{ Unit Unit }

// KeyCreated records a new API key.
type KeyCreated struct{ Key Key }

// KeyRevoked records a revocation, effective at At.
type KeyRevoked struct {
	KeyID string
	At    time.Time
}

func (UnitCreated) kind() string { return "unit.created" }

func (c UnitCreated) apply(s *State) {
	u := c.Unit
	s.units[u.ID] = &u
	s.unitOrder = append(s.unitOrder, u.ID)
}

func (KeyCreated) kind() string { return "key.created" }

func (c KeyCreated) apply(s *State) {
	k := c.Key
	s.keys[k.ID] = &k
	s.keyOrder = append(s.keyOrder, k.ID)
	if k.Type == Secret {
		s.bySecret[string(k.Hash)] = k.ID
	} else {
		s.byToken[k.Token] = k.ID
		if k.RevokedAt == nil {
			s.indexOrigins(&k)
		}
	}
}

func (KeyRevoked) kind() string { return "key.revoked" }

func (c KeyRevoked) check() error {
	if c.KeyID == "" {
		return errors.New("missing key id")
	}
	return nil
}

func (c KeyRevoked) apply(s *State) {
	k := s.keys[c.KeyID]
	if k == nil {
		panic("directory: revoke of unknown key " + c.KeyID)
	}
	if k.RevokedAt == nil && k.Type == Publishable {
		s.unindexOrigins(k)
	}
	at := c.At
	k.RevokedAt = &at
}

// kinds is the registry of change kinds: adding one is its block above
// plus one line here. The names are the log format.
var kinds = func() map[string]func(body []byte) (Change, error) {
	m := map[string]func([]byte) (Change, error){}
	for _, k := range []changeKind{
		kindOf[UnitCreated](),
		kindOf[KeyCreated](),
		kindOf[KeyRevoked](),
		kindOf[InvitationCreated](),
		kindOf[MemberJoined](),
		kindOf[PasswordSet](),
		kindOf[RoleSet](),
		kindOf[LinkRevoked](),
		kindOf[DeviceCreated](),
		kindOf[DeviceInitialized](),
		kindOf[DeviceRevoked](),
	} {
		if m[k.name] != nil {
			panic("directory: change kind " + k.name + " registered twice")
		}
		m[k.name] = k.decode
	}
	return m
}()

// changeKind is a registry entry: a kind's log name and its decoder.
type changeKind struct {
	name   string
	decode func(body []byte) (Change, error)
}

// kindOf makes the registry entry of change type C; its decoder reads
// JSON, then runs C's own check if it has one.
func kindOf[C Change]() changeKind {
	var zero C
	return changeKind{zero.kind(), func(b []byte) (Change, error) {
		var v C
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, err
		}
		if c, ok := any(v).(interface{ check() error }); ok {
			if err := c.check(); err != nil {
				return nil, err
			}
		}
		return v, nil
	}}
}

// ErrNotFound is returned for an unknown unit or key.
var ErrNotFound = errors.New("directory: not found")

// FieldError is a refused input naming the request field at fault, so the
// HTTP layer can answer 400 with that field in its details.
type FieldError struct {
	Field, Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// State is the directory.
type State struct {
	units     map[string]*Unit
	unitOrder []string
	keys      map[string]*Key
	keyOrder  []string
	bySecret  map[string]string // string(hash) -> key id
	byToken   map[string]string // publishable token -> key id
	// byOrigin indexes the origins of unrevoked publishable keys, so a
	// CORS preflight costs one lookup however many keys the service has.
	byOrigin map[string]*originKeys
	// people are the console's members and their links (members.go).
	people *people
	// devs are the door devices (devices.go).
	devs devices
}

// originKeys are the unrevoked publishable keys listing one origin, and
// until when one of them is active (zero: one never expires).
type originKeys struct {
	keys  []string
	until time.Time
}

func (o *originKeys) recompute(keys map[string]*Key) {
	o.until = time.Time{}
	for i, id := range o.keys {
		e := keys[id].ExpiresAt
		if e == nil {
			o.until = time.Time{}
			return
		}
		if i == 0 || e.After(o.until) {
			o.until = *e
		}
	}
}

// New returns an empty directory.
func New() *State {
	return &State{
		units:    map[string]*Unit{},
		keys:     map[string]*Key{},
		bySecret: map[string]string{},
		byToken:  map[string]string{},
		byOrigin: map[string]*originKeys{},
		people:   newPeople(),
		devs:     newDevices(),
	}
}

// UnitNameMax bounds a unit's name, in characters.
const UnitNameMax = 200

// CreateUnit decides a new unit.
func (s *State) CreateUnit(id, name string, now time.Time) (Change, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return nil, &FieldError{Field: "name", Reason: "must not be empty"}
	}
	if reason := TextProblem(name, UnitNameMax); reason != "" {
		return nil, &FieldError{Field: "name", Reason: reason}
	}
	if _, ok := s.units[id]; ok {
		return nil, fmt.Errorf("directory: unit %s exists", id)
	}
	return UnitCreated{Unit: Unit{ID: id, Name: name, CreatedAt: now.UTC()}}, nil
}

// CreateKey decides a new key. secret is the whole key as handed out once.
// k.CreatedAt is the time of the decision: a key whose expiresAt is not
// after it could never authenticate, so it is refused rather than handed
// out dead (the caller would only learn it from a 401 that, by design,
// does not say why).
func (s *State) CreateKey(k Key, secret string) (Change, error) {
	if _, ok := s.units[k.UnitID]; !ok {
		return nil, ErrNotFound
	}
	if k.ExpiresAt != nil && !k.ExpiresAt.After(k.CreatedAt) {
		return nil, &FieldError{Field: "expiresAt", Reason: "must be in the future"}
	}
	switch k.Type {
	case Secret:
		k.Hash = HashSecret(secret)
	case Publishable:
		k.Token = secret
	default:
		return nil, &FieldError{Field: "type", Reason: "must be secret or publishable"}
	}
	if len(secret) > 4 {
		k.Hint = secret[len(secret)-4:]
	}
	if k.Origins == nil {
		k.Origins = []string{}
	}
	return KeyCreated{Key: k}, nil
}

// RevokeKey decides a revocation. Revoking a revoked key changes nothing.
func (s *State) RevokeKey(id string, now time.Time) (Change, error) {
	k, ok := s.keys[id]
	if !ok {
		return nil, ErrNotFound
	}
	if k.RevokedAt != nil {
		return nil, nil
	}
	return KeyRevoked{KeyID: id, At: now.UTC()}, nil
}

// TextProblem says what is wrong with a line of text a person typed, ""
// when nothing: more than max characters, or a control character (a NUL
// byte, an escape; tabs and line breaks included, as a name is one line).
// The reason reads after "It" or a field's name.
func TextProblem(s string, max int) string {
	if utf8.RuneCountInString(s) > max {
		return fmt.Sprintf("must be at most %d characters", max)
	}
	if !utf8.ValidString(s) {
		return "must be text (it holds bytes that are not UTF-8)"
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return "must not hold control characters (such as a NUL byte or a tab)"
		}
	}
	return ""
}

// Apply performs a change. Each kind's apply lives with its type.
func (s *State) Apply(c Change) { c.apply(s) }

// Unit returns a copy of unit id.
func (s *State) Unit(id string) (Unit, bool) {
	u, ok := s.units[id]
	if !ok {
		return Unit{}, false
	}
	return *u, true
}

// Units lists units in creation order.
func (s *State) Units() []Unit {
	out := make([]Unit, 0, len(s.unitOrder))
	for _, id := range s.unitOrder {
		out = append(out, *s.units[id])
	}
	return out
}

// Key returns a copy of key id.
func (s *State) Key(id string) (Key, bool) {
	k, ok := s.keys[id]
	if !ok {
		return Key{}, false
	}
	return copyKey(k), true
}

// Keys lists the keys of a unit in creation order.
func (s *State) Keys(unitID string) []Key {
	var out []Key
	for _, id := range s.keyOrder {
		if k := s.keys[id]; k.UnitID == unitID {
			out = append(out, copyKey(k))
		}
	}
	return out
}

// Lookup finds the key a presented token belongs to, active or not.
func (s *State) Lookup(token string) (*Key, bool) {
	var id string
	var ok bool
	switch {
	case strings.HasPrefix(token, "sk_"):
		id, ok = s.bySecret[string(HashSecret(token))]
	case strings.HasPrefix(token, "pk_"):
		id, ok = s.byToken[token]
	}
	if !ok {
		return nil, false
	}
	return s.keys[id], true
}

// OriginListed reports whether any active publishable key lists origin.
func (s *State) OriginListed(origin string, now time.Time) bool {
	o, ok := s.byOrigin[origin]
	return ok && (o.until.IsZero() || now.Before(o.until))
}

// indexOrigins adds publishable key k to the origin index.
func (s *State) indexOrigins(k *Key) {
	for _, origin := range k.Origins {
		o := s.byOrigin[origin]
		if o == nil {
			o = &originKeys{}
			s.byOrigin[origin] = o
		}
		if slices.Contains(o.keys, k.ID) { // an origin listed twice
			continue
		}
		o.keys = append(o.keys, k.ID)
		switch {
		case len(o.keys) == 1 && k.ExpiresAt != nil:
			o.until = *k.ExpiresAt
		case len(o.keys) == 1 || o.until.IsZero() || k.ExpiresAt == nil:
			o.until = time.Time{} // some key never expires
		case k.ExpiresAt.After(o.until):
			o.until = *k.ExpiresAt
		}
	}
}

// unindexOrigins removes a revoked key from the origin index.
func (s *State) unindexOrigins(k *Key) {
	for _, origin := range k.Origins {
		o := s.byOrigin[origin]
		if o == nil {
			continue
		}
		o.keys = slices.DeleteFunc(o.keys, func(id string) bool { return id == k.ID })
		if len(o.keys) == 0 {
			delete(s.byOrigin, origin)
		} else {
			o.recompute(s.keys)
		}
	}
}

// Clone returns a deep copy, used to publish an immutable read view.
func (s *State) Clone() *State {
	c := New()
	for _, id := range s.unitOrder {
		u := *s.units[id]
		c.units[id] = &u
	}
	c.unitOrder = append([]string(nil), s.unitOrder...)
	for _, id := range s.keyOrder {
		k := copyKey(s.keys[id])
		c.keys[id] = &k
	}
	c.keyOrder = append([]string(nil), s.keyOrder...)
	for h, id := range s.bySecret {
		c.bySecret[h] = id
	}
	for t, id := range s.byToken {
		c.byToken[t] = id
	}
	for origin, o := range s.byOrigin {
		c.byOrigin[origin] = &originKeys{keys: slices.Clone(o.keys), until: o.until}
	}
	c.people = s.people.clone()
	c.devs = s.devs.clone()
	return c
}

func copyKey(k *Key) Key {
	c := *k
	c.Origins = append([]string(nil), k.Origins...)
	c.Hash = append([]byte(nil), k.Hash...)
	return c
}

type record struct {
	K string          `json:"k"`
	C json.RawMessage `json:"c"`
}

// Marshal encodes a change as a log record.
func Marshal(c Change) ([]byte, error) {
	body, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("directory: marshal %s: %w", c.kind(), err)
	}
	rec, err := json.Marshal(record{K: c.kind(), C: body})
	if err != nil {
		return nil, err
	}
	return append([]byte{1}, rec...), nil
}

// Unmarshal decodes a log record.
func Unmarshal(b []byte) (Change, error) {
	if len(b) == 0 || b[0] != 1 {
		return nil, errors.New("directory: unknown record version")
	}
	var r record
	if err := json.Unmarshal(b[1:], &r); err != nil {
		return nil, fmt.Errorf("directory: decode record: %w", err)
	}
	decode := kinds[r.K]
	if decode == nil {
		return nil, fmt.Errorf("directory: unknown change kind %q", r.K)
	}
	c, err := decode(r.C)
	if err != nil {
		return nil, fmt.Errorf("directory: decode %s: %w", r.K, err)
	}
	return c, nil
}
