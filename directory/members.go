package directory

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/argon2"
)

// Console roles of a member in a business unit, strongest first.
const (
	RoleOwner  = "owner"  // everything, members and keys included
	RoleAdmin  = "admin"  // everything but members
	RoleDoor   = "door"   // check-in pages only
	RoleViewer = "viewer" // read only
)

// ValidRole reports whether r is one of the four roles.
func ValidRole(r string) bool {
	return r == RoleOwner || r == RoleAdmin || r == RoleDoor || r == RoleViewer
}

// Invitation kinds: a link that makes (or extends) a member, and a link
// that sets a member's password.
const (
	KindInvite = "invite"
	KindReset  = "reset"
)

// Bounds of the member records.
const (
	// PendingMax bounds the unexpired, unused links of one business unit.
	PendingMax = 200
	// MembersMax bounds the members of one business unit.
	MembersMax = 1000
	// PasswordMinLen and PasswordMaxLen bound a password (in bytes; the
	// upper bound caps the hashing work one request can ask for).
	PasswordMinLen = 10
	PasswordMaxLen = 200
	emailMaxLen    = EmailMax
	nameMaxLen     = 200
)

// EmailMax bounds an email address, in bytes (RFC 5321's path limit):
// the sign-in form refuses a longer one before counting or logging it.
const EmailMax = 320

// Member is a person who signs in to the console with an email and a
// password, with one role per business unit.
type Member struct {
	ID    string `json:"id"`
	Email string `json:"email"` // lower case
	Name  string `json:"name"`
	// PasswordHash is the PHC string of the argon2id hash (HashPassword).
	PasswordHash string            `json:"passwordHash"`
	Roles        map[string]string `json:"roles"` // unit id -> role
	CreatedAt    time.Time         `json:"createdAt"`
	// PasswordAt is when the password was last set: sessions begun
	// before it are no longer valid.
	PasswordAt time.Time `json:"passwordAt"`
}

// Invitation is a one-time link: an invitation to a unit with a role, or a
// password reset of a member. Only a SHA-256 hash of its token is kept.
type Invitation struct {
	ID        string     `json:"id"`
	Kind      string     `json:"kind"`
	UnitID    string     `json:"unitId"`
	Email     string     `json:"email"`
	Role      string     `json:"role,omitempty"`
	MemberID  string     `json:"memberId,omitempty"` // reset: whose password
	Hash      []byte     `json:"hash"`
	By        string     `json:"by"` // who made it: a member id or "operator"
	CreatedAt time.Time  `json:"createdAt"`
	ExpiresAt time.Time  `json:"expiresAt"`
	UsedAt    *time.Time `json:"usedAt"`
	// EndedAt is when the link was ended unused, and Ended why (one of
	// the End* reasons): revoked, replaced by a newer reset link of the
	// same member, its maker removed, or the member's password changed.
	EndedAt *time.Time `json:"endedAt,omitempty"`
	Ended   string     `json:"ended,omitempty"`
}

// Why a link ended unused (Invitation.Ended).
const (
	EndRevoked    = "revoked"
	EndReplaced   = "replaced"
	EndMakerGone  = "maker_removed"
	EndPasswordAt = "password_changed"
)

// Usable reports whether the link still works at now.
func (i *Invitation) Usable(now time.Time) bool {
	return i.UsedAt == nil && i.EndedAt == nil && now.Before(i.ExpiresAt)
}

// ErrNotOwnerOfAll refuses a password reset link from a member who is not
// an owner of every unit the member to reset belongs to: a password is
// the person's, and opens every unit they are in, so an owner of one unit
// must not be able to take over a role in another.
var ErrNotOwnerOfAll = errors.New("directory: only the operator or an owner of every unit of the member may reset their password")

// HashToken is the stored form of an invitation or reset token.
func HashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// ErrLinkInvalid is returned for an unknown, used or expired link: the
// three are not told apart.
var ErrLinkInvalid = errors.New("directory: link invalid or expired")

// people holds the member records of the directory.
type people struct {
	members  map[string]*Member
	order    []string
	byEmail  map[string]string // email -> member id
	invites  map[string]*Invitation
	byHash   map[string]string // string(token hash) -> invitation id
	invOrder []string
}

func newPeople() *people {
	return &people{
		members: map[string]*Member{},
		byEmail: map[string]string{},
		invites: map[string]*Invitation{},
		byHash:  map[string]string{},
	}
}

func (p *people) clone() *people {
	c := newPeople()
	for _, id := range p.order {
		m := copyMember(p.members[id])
		c.members[id] = &m
	}
	c.order = slices.Clone(p.order)
	for e, id := range p.byEmail {
		c.byEmail[e] = id
	}
	for _, id := range p.invOrder {
		i := *p.invites[id]
		c.invites[id] = &i
	}
	c.invOrder = slices.Clone(p.invOrder)
	for h, id := range p.byHash {
		c.byHash[h] = id
	}
	return c
}

func copyMember(m *Member) Member {
	c := *m
	c.Roles = make(map[string]string, len(m.Roles))
	for u, r := range m.Roles {
		c.Roles[u] = r
	}
	return c
}

// InvitationCreated records a new invitation or reset link.
type InvitationCreated struct{ Invitation Invitation }

// MemberJoined records an accepted invitation: a new member (with its
// password hash) or a role in one more unit for an existing one.
type MemberJoined struct {
	InvitationID string
	MemberID     string
	Name         string
	PasswordHash string // empty for an existing member
	At           time.Time
}

// PasswordSet records a used reset link.
type PasswordSet struct {
	InvitationID string
	PasswordHash string
	At           time.Time
}

// LinkRevoked records an open link ended by an owner or the operator.
type LinkRevoked struct {
	InvitationID string
	By           string
	At           time.Time
}

// RoleSet records a member's new role in a unit; an empty Role removes the
// member from the unit.
type RoleSet struct {
	MemberID string
	UnitID   string
	Role     string
	At       time.Time
}

func (InvitationCreated) kind() string { return "invitation.created" }

func (c InvitationCreated) check() error {
	if c.Invitation.ID == "" || len(c.Invitation.Hash) != sha256.Size {
		return errors.New("invitation without id or hash")
	}
	return nil
}

func (c InvitationCreated) apply(s *State) {
	p := s.people
	// Links of the unit that lapsed before this one was made are dropped
	// here, at a point every replay reaches at the same state.
	p.invOrder = slices.DeleteFunc(p.invOrder, func(id string) bool {
		i := p.invites[id]
		if i.UnitID == c.Invitation.UnitID && !i.Usable(c.Invitation.CreatedAt) {
			delete(p.byHash, string(i.Hash))
			delete(p.invites, id)
			return true
		}
		return false
	})
	i := c.Invitation
	if i.Kind == KindReset {
		// One live reset link per member: a newer one ends the others.
		p.endLinks(i.CreatedAt, EndReplaced, func(o *Invitation) bool {
			return o.Kind == KindReset && o.MemberID == i.MemberID
		})
	}
	p.invites[i.ID] = &i
	p.byHash[string(i.Hash)] = i.ID
	p.invOrder = append(p.invOrder, i.ID)
}

// endLinks ends, at at and for why, every usable link match selects.
func (p *people) endLinks(at time.Time, why string, match func(*Invitation) bool) {
	for _, id := range p.invOrder {
		if o := p.invites[id]; o.Usable(at) && match(o) {
			t := at
			o.EndedAt, o.Ended = &t, why
		}
	}
}

func (LinkRevoked) kind() string { return "link.revoked" }

func (c LinkRevoked) check() error {
	if c.InvitationID == "" {
		return errors.New("link revoked without invitation id")
	}
	return nil
}

func (c LinkRevoked) apply(s *State) {
	i := s.people.invites[c.InvitationID]
	if i == nil {
		panic("directory: revoke of unknown link " + c.InvitationID)
	}
	if i.UsedAt == nil && i.EndedAt == nil {
		at := c.At
		i.EndedAt, i.Ended = &at, EndRevoked
	}
}

func (MemberJoined) kind() string { return "member.joined" }

func (c MemberJoined) check() error {
	if c.InvitationID == "" || c.MemberID == "" {
		return errors.New("member joined without invitation or member id")
	}
	return nil
}

func (c MemberJoined) apply(s *State) {
	p := s.people
	inv := p.invites[c.InvitationID]
	if inv == nil {
		panic("directory: join by unknown invitation " + c.InvitationID)
	}
	at := c.At
	inv.UsedAt = &at
	m := p.members[c.MemberID]
	if m == nil {
		m = &Member{ID: c.MemberID, Email: inv.Email, Name: c.Name, PasswordHash: c.PasswordHash,
			Roles: map[string]string{}, CreatedAt: c.At, PasswordAt: c.At}
		p.members[m.ID] = m
		p.order = append(p.order, m.ID)
		p.byEmail[m.Email] = m.ID
	}
	m.Roles[inv.UnitID] = inv.Role
}

func (PasswordSet) kind() string { return "member.password_set" }

func (c PasswordSet) check() error {
	if c.InvitationID == "" || c.PasswordHash == "" {
		return errors.New("password set without invitation or hash")
	}
	return nil
}

func (c PasswordSet) apply(s *State) {
	p := s.people
	inv := p.invites[c.InvitationID]
	if inv == nil || p.members[inv.MemberID] == nil {
		panic("directory: password set by unknown link " + c.InvitationID)
	}
	at := c.At
	inv.UsedAt = &at
	m := p.members[inv.MemberID]
	m.PasswordHash = c.PasswordHash
	m.PasswordAt = c.At
	// A changed password ends every other reset link of the member.
	p.endLinks(c.At, EndPasswordAt, func(o *Invitation) bool { return o.Kind == KindReset && o.MemberID == m.ID })
}

func (RoleSet) kind() string { return "member.role_set" }

func (c RoleSet) check() error {
	if c.MemberID == "" || c.UnitID == "" || (c.Role != "" && !ValidRole(c.Role)) {
		return errors.New("role set without member, unit or valid role")
	}
	return nil
}

func (c RoleSet) apply(s *State) {
	m := s.people.members[c.MemberID]
	if m == nil {
		panic("directory: role of unknown member " + c.MemberID)
	}
	was := m.Roles[c.UnitID]
	if c.Role == "" {
		delete(m.Roles, c.UnitID)
	} else {
		m.Roles[c.UnitID] = c.Role
	}
	if was == RoleOwner && c.Role != RoleOwner {
		// The links a member made as an owner of the unit end with that
		// role: the unit's invitations, and reset links of the unit's
		// members (whose authority was being their owner).
		p := s.people
		p.endLinks(c.At, EndMakerGone, func(o *Invitation) bool {
			if o.By != m.ID {
				return false
			}
			if o.UnitID == c.UnitID {
				return true
			}
			if t := p.members[o.MemberID]; o.Kind == KindReset && t != nil {
				_, in := t.Roles[c.UnitID]
				return in
			}
			return false
		})
	}
}

// NormalEmail is the form emails are kept and looked up in.
func NormalEmail(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

func validEmail(e string) bool {
	at := strings.IndexByte(e, '@')
	return at > 0 && at < len(e)-1 && len(e) <= emailMaxLen && !strings.ContainsAny(e, " \t\r\n<>,;\"") &&
		strings.Count(e, "@") == 1 && TextProblem(e, emailMaxLen) == ""
}

// pending counts the usable links of a unit at now.
func (p *people) pending(unitID string, now time.Time) int {
	n := 0
	for _, id := range p.invOrder {
		if i := p.invites[id]; i.UnitID == unitID && i.Usable(now) {
			n++
		}
	}
	return n
}

// Invite decides an invitation of inv.Email to inv.UnitID with inv.Role.
// inv carries its id, token hash, creator, creation time and expiry.
func (s *State) Invite(inv Invitation) (Change, error) {
	if _, ok := s.units[inv.UnitID]; !ok {
		return nil, ErrNotFound
	}
	inv.Kind = KindInvite
	inv.Email = NormalEmail(inv.Email)
	if !validEmail(inv.Email) {
		return nil, &FieldError{Field: "email", Reason: "must be an email address"}
	}
	if !ValidRole(inv.Role) {
		return nil, &FieldError{Field: "role", Reason: "must be owner, admin, door or viewer"}
	}
	if id, ok := s.people.byEmail[inv.Email]; ok {
		if _, in := s.people.members[id].Roles[inv.UnitID]; in {
			return nil, &FieldError{Field: "email", Reason: "is already a member of this unit"}
		}
	}
	if s.countMembers(inv.UnitID) >= MembersMax {
		return nil, &FieldError{Field: "email", Reason: fmt.Sprintf("the unit has the most members allowed (%d)", MembersMax)}
	}
	return s.newLink(inv)
}

// ResetLink decides a password reset link for member memberID, made from
// unit inv.UnitID (one of the member's) by inv.By: the operator, or a
// member who is an owner of every unit memberID belongs to (else
// ErrNotOwnerOfAll). A password opens every unit of its member, so the
// right to reset it is the right over all of them.
func (s *State) ResetLink(memberID string, inv Invitation) (Change, error) {
	m, ok := s.people.members[memberID]
	if !ok {
		return nil, ErrNotFound
	}
	if _, in := m.Roles[inv.UnitID]; !in {
		return nil, ErrNotFound
	}
	if !s.MayReset(inv.By, memberID) {
		return nil, ErrNotOwnerOfAll
	}
	inv.Kind, inv.MemberID, inv.Email, inv.Role = KindReset, memberID, m.Email, ""
	return s.newLink(inv)
}

// MayReset reports whether by (a member id, or "operator") may make a
// password reset link for member memberID: the operator may, and a member
// who is an owner of every unit memberID has a role in.
func (s *State) MayReset(by, memberID string) bool {
	if by == "operator" {
		return true
	}
	maker, ok := s.people.members[by]
	m, ok2 := s.people.members[memberID]
	if !ok || !ok2 || len(m.Roles) == 0 {
		return false
	}
	for u := range m.Roles {
		if maker.Roles[u] != RoleOwner {
			return false
		}
	}
	return true
}

// RevokeLink decides the end of open link id, seen from unit unitID by an
// owner there (or the operator): an invitation of that unit, or a reset
// link of one of its members. Revoking only takes a power away, so any
// owner of a unit of the member may end their reset link.
func (s *State) RevokeLink(id, unitID, by string, now time.Time) (Change, error) {
	i, ok := s.people.invites[id]
	if !ok || !s.linkOfUnit(i, unitID) {
		return nil, ErrNotFound
	}
	if !i.Usable(now) {
		return nil, nil
	}
	return LinkRevoked{InvitationID: id, By: by, At: now.UTC()}, nil
}

// linkOfUnit reports whether unit unitID's owners see link i: their
// unit's invitations, and reset links of their members.
func (s *State) linkOfUnit(i *Invitation, unitID string) bool {
	if i.Kind == KindReset {
		m := s.people.members[i.MemberID]
		if m == nil {
			return false
		}
		_, in := m.Roles[unitID]
		return in
	}
	return i.UnitID == unitID
}

func (s *State) newLink(inv Invitation) (Change, error) {
	if !inv.ExpiresAt.After(inv.CreatedAt) || len(inv.Hash) != sha256.Size || inv.ID == "" {
		return nil, errors.New("directory: link without id, hash or future expiry")
	}
	if s.people.pending(inv.UnitID, inv.CreatedAt) >= PendingMax {
		return nil, &FieldError{Field: "email", Reason: fmt.Sprintf("the unit has the most open links allowed (%d); wait for some to expire", PendingMax)}
	}
	inv.CreatedAt, inv.ExpiresAt, inv.UsedAt = inv.CreatedAt.UTC(), inv.ExpiresAt.UTC(), nil
	return InvitationCreated{Invitation: inv}, nil
}

func (s *State) countMembers(unitID string) int {
	n := 0
	for _, m := range s.people.members {
		if _, ok := m.Roles[unitID]; ok {
			n++
		}
	}
	return n
}

// Link returns the usable link of token at now.
func (s *State) Link(token string, now time.Time) (Invitation, error) {
	id, ok := s.people.byHash[string(HashToken(token))]
	if !ok {
		return Invitation{}, ErrLinkInvalid
	}
	i := s.people.invites[id]
	if !i.Usable(now) {
		return Invitation{}, ErrLinkInvalid
	}
	return *i, nil
}

// Accept decides the use of an invitation token. A new member needs a
// name and a password hash; an existing member (same email), whose
// password the caller has checked, joins with memberID ignored and
// passwordHash empty.
func (s *State) Accept(token, memberID, name, passwordHash string, now time.Time) (Change, error) {
	inv, err := s.Link(token, now)
	if err != nil || inv.Kind != KindInvite {
		return nil, ErrLinkInvalid
	}
	if _, ok := s.units[inv.UnitID]; !ok {
		return nil, ErrLinkInvalid
	}
	if id, ok := s.people.byEmail[inv.Email]; ok {
		return MemberJoined{InvitationID: inv.ID, MemberID: id, At: now.UTC()}, nil
	}
	name = strings.TrimSpace(name)
	if name == "" {
		return nil, &FieldError{Field: "name", Reason: "must not be empty"}
	}
	if reason := TextProblem(name, nameMaxLen); reason != "" {
		return nil, &FieldError{Field: "name", Reason: reason}
	}
	if passwordHash == "" {
		return nil, &FieldError{Field: "password", Reason: "must not be empty"}
	}
	return MemberJoined{InvitationID: inv.ID, MemberID: memberID, Name: name, PasswordHash: passwordHash, At: now.UTC()}, nil
}

// SetPassword decides the use of a reset token.
func (s *State) SetPassword(token, passwordHash string, now time.Time) (Change, error) {
	inv, err := s.Link(token, now)
	if err != nil || inv.Kind != KindReset || s.people.members[inv.MemberID] == nil {
		return nil, ErrLinkInvalid
	}
	if passwordHash == "" {
		return nil, &FieldError{Field: "password", Reason: "must not be empty"}
	}
	return PasswordSet{InvitationID: inv.ID, PasswordHash: passwordHash, At: now.UTC()}, nil
}

// SetRole decides a member's new role in a unit ("" removes the member
// from it). A unit keeps at least one owner.
func (s *State) SetRole(memberID, unitID, role string, now time.Time) (Change, error) {
	m, ok := s.people.members[memberID]
	if !ok {
		return nil, ErrNotFound
	}
	cur, in := m.Roles[unitID]
	if !in {
		return nil, ErrNotFound
	}
	if role != "" && !ValidRole(role) {
		return nil, &FieldError{Field: "role", Reason: "must be owner, admin, door or viewer"}
	}
	if cur == role {
		return nil, nil
	}
	if cur == RoleOwner {
		owners := 0
		for _, o := range s.people.members {
			if o.Roles[unitID] == RoleOwner {
				owners++
			}
		}
		if owners == 1 {
			return nil, &FieldError{Field: "role", Reason: "a unit keeps at least one owner"}
		}
	}
	return RoleSet{MemberID: memberID, UnitID: unitID, Role: role, At: now.UTC()}, nil
}

// Member returns a copy of member id.
func (s *State) Member(id string) (Member, bool) {
	m, ok := s.people.members[id]
	if !ok {
		return Member{}, false
	}
	return copyMember(m), true
}

// MemberByEmail returns a copy of the member with that email.
func (s *State) MemberByEmail(email string) (Member, bool) {
	id, ok := s.people.byEmail[NormalEmail(email)]
	if !ok {
		return Member{}, false
	}
	return s.Member(id)
}

// Members lists the members of a unit in joining order.
func (s *State) Members(unitID string) []Member {
	var out []Member
	for _, id := range s.people.order {
		if m := s.people.members[id]; m.Roles[unitID] != "" {
			out = append(out, copyMember(m))
		}
	}
	return out
}

// Pending lists the usable links a unit's owners see at now, oldest
// first: the unit's invitations and the reset links of its members.
func (s *State) Pending(unitID string, now time.Time) []Invitation {
	var out []Invitation
	for _, id := range s.people.invOrder {
		if i := s.people.invites[id]; s.linkOfUnit(i, unitID) && i.Usable(now) {
			out = append(out, *i)
		}
	}
	return out
}

// Password hashing: argon2id with the parameters OWASP recommends for a
// 19 MiB memory cost (m=19456 KiB, t=2, p=1), kept in the PHC string
// format so the parameters can change without invalidating old hashes.
const (
	argonTime    = 2
	argonMemory  = 19 * 1024
	argonThreads = 1
	argonKeyLen  = 32
	// SaltLen is the salt length HashPassword expects.
	SaltLen = 16
)

// CheckPassword refuses a password that is too short or too long.
func CheckPassword(pw string) error {
	if len(pw) < PasswordMinLen {
		return &FieldError{Field: "password", Reason: fmt.Sprintf("must be at least %d characters", PasswordMinLen)}
	}
	if len(pw) > PasswordMaxLen {
		return &FieldError{Field: "password", Reason: fmt.Sprintf("must be at most %d characters", PasswordMaxLen)}
	}
	return nil
}

// HashPassword returns the PHC string of pw's argon2id hash with salt
// (SaltLen random bytes the caller draws: this package reads no entropy).
func HashPassword(pw string, salt []byte) string {
	key := argon2.IDKey([]byte(pw), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		b64.EncodeToString(salt), b64.EncodeToString(key))
}

// VerifyPassword reports whether pw matches the PHC string hash, in
// constant time over the derived key.
func VerifyPassword(hash, pw string) bool {
	if len(pw) > PasswordMaxLen {
		return false
	}
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	var v int
	var m uint32
	var t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[2], "v=%d", &v); err != nil || v != argon2.Version {
		return false
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil {
		return false
	}
	// Bounds on stored parameters: a corrupt record must not cost gigabytes.
	if m == 0 || m > 256*1024 || t == 0 || t > 10 || p == 0 || p > 8 {
		return false
	}
	b64 := base64.RawStdEncoding
	salt, err1 := b64.DecodeString(parts[4])
	key, err2 := b64.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(key) == 0 || len(key) > 64 {
		return false
	}
	got := argon2.IDKey([]byte(pw), salt, t, m, p, uint32(len(key)))
	return subtle.ConstantTimeCompare(got, key) == 1
}

// LinkByID returns a copy of link id, usable or not.
func (s *State) LinkByID(id string) (Invitation, bool) {
	i, ok := s.people.invites[id]
	if !ok {
		return Invitation{}, false
	}
	return *i, true
}
