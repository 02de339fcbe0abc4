package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"ticketd/directory"
)

// dirDecide asks the directory actor to decide with fn against its state
// at now; fn answers the result to reply with and the change to log (nil:
// nothing changes). The console's member operations use it, so each is one
// function here rather than one message type.
type dirDecide struct {
	fn func(st *directory.State, now time.Time) (any, directory.Change, error)
	// mail, when set, is the mail the change owes (an invitation or reset
	// link): written to the outbox in the change's own batch.
	mail *TicketMail
}

func (a *dirActor) decideFn(m *dirDecide) func() (any, directory.Change, error) {
	return func() (any, directory.Change, error) { return m.fn(a.st, a.sys.cfg.Now()) }
}

// owe writes the mail of m, if any, into the open batch of the change just
// appended at seq, and wakes the mailer once it is durable.
func (a *dirActor) owe(m *dirDecide, seq uint64) {
	if m.mail == nil {
		return
	}
	m.mail.Key = directoryMailKey(seq)
	v, err := json.Marshal(m.mail)
	if err != nil {
		panic(fmt.Sprintf("actors: encode directory mail: %v", err))
	}
	a.put([]byte(m.mail.Key), v)
	if a.sys.cfg.OnOutbox != nil && a.shared == nil {
		a.com.afterDurable(a.sys.cfg.OnOutbox)
	}
}

// Outbox kinds of the console's links (TicketMail.Kind); the link is in
// PassURL, the unit's name in EventName.
const (
	MailInvitation = "invitation"
	MailReset      = "reset"
)

// directoryMailKey is the outbox key of a mail the directory change of
// seq owes (the shape of OutboxPrefix, with "directory" for the event).
func directoryMailKey(seq uint64) string {
	return fmt.Sprintf("%s%s/%016x-%04x", OutboxPrefix, directoryStream, seq, 0)
}

// LinkSpec describes an invitation or password-reset link to make.
type LinkSpec struct {
	UnitID string
	Email  string // invitation: whom
	Role   string // invitation: with which role
	// MemberID is whose password a reset link sets.
	MemberID string
	By       string // a member id, or "operator"
	TTL      time.Duration
	// LinkURL, when set, makes the link's URL from its token, and the
	// link is also mailed through the durable outbox. The outbox entry
	// holds the link until it is delivered (only a hash is kept in the
	// directory).
	LinkURL func(token string) string
	// UnitName names the unit in the mail.
	UnitName string
}

// CreateLink makes an invitation (spec.MemberID empty) or a password
// reset link and returns its record and its token, which is never
// available again (only its hash is kept).
func (s *System) CreateLink(ctx context.Context, spec LinkSpec) (directory.Invitation, string, error) {
	token := s.cfg.IDs.Code(40)
	inv := directory.Invitation{ID: s.cfg.IDs.New("inv_"), UnitID: spec.UnitID, Email: spec.Email, Role: spec.Role,
		Hash: directory.HashToken(token), By: spec.By}
	msg := &dirDecide{}
	if spec.LinkURL != nil {
		kind := MailInvitation
		if spec.MemberID != "" {
			kind = MailReset
		}
		msg.mail = &TicketMail{Kind: kind, Email: spec.Email, EventName: spec.UnitName, TicketName: spec.Role,
			PassURL: spec.LinkURL(token)}
	}
	msg.fn = func(st *directory.State, now time.Time) (any, directory.Change, error) {
		inv.CreatedAt, inv.ExpiresAt = now, now.Add(spec.TTL)
		var ch directory.Change
		var err error
		if spec.MemberID != "" {
			ch, err = st.ResetLink(spec.MemberID, inv)
		} else {
			ch, err = st.Invite(inv)
		}
		if err != nil {
			return nil, nil, err
		}
		created := ch.(directory.InvitationCreated).Invitation
		if msg.mail != nil {
			msg.mail.Email, msg.mail.CreatedAt = created.Email, now.UTC()
		}
		return created, ch, nil
	}
	res, err := s.askDirectory(ctx, msg)
	if err != nil {
		return directory.Invitation{}, "", err
	}
	return res.(directory.Invitation), token, nil
}

// RevokeLink ends open link id, seen from unit unitID (an invitation of
// it, or a reset link of one of its members), by a member id or
// "operator". It answers the link as it now stands.
func (s *System) RevokeLink(ctx context.Context, id, unitID, by string) (directory.Invitation, error) {
	res, err := s.askDirectory(ctx, &dirDecide{fn: func(st *directory.State, now time.Time) (any, directory.Change, error) {
		ch, err := st.RevokeLink(id, unitID, by, now)
		if err != nil {
			return nil, nil, err
		}
		return func() any { i, _ := st.LinkByID(id); return i }, ch, nil
	}})
	if err != nil {
		return directory.Invitation{}, err
	}
	return res.(directory.Invitation), nil
}

// AcceptInvitation uses an invitation token: a new member with name and
// passwordHash, or, for an email that is already a member's (whose
// password the caller has checked), one more unit for that member. It
// answers the member as it now stands.
func (s *System) AcceptInvitation(ctx context.Context, token, name, passwordHash string) (directory.Member, error) {
	id := s.cfg.IDs.New("mem_")
	res, err := s.askDirectory(ctx, &dirDecide{fn: func(st *directory.State, now time.Time) (any, directory.Change, error) {
		ch, err := st.Accept(token, id, name, passwordHash, now)
		if err != nil {
			return nil, nil, err
		}
		return afterApply(st, ch.(directory.MemberJoined).MemberID), ch, nil
	}})
	if err != nil {
		return directory.Member{}, err
	}
	return res.(directory.Member), nil
}

// SetPassword uses a reset token and answers the member it belongs to.
func (s *System) SetPassword(ctx context.Context, token, passwordHash string) (directory.Member, error) {
	res, err := s.askDirectory(ctx, &dirDecide{fn: func(st *directory.State, now time.Time) (any, directory.Change, error) {
		inv, err := st.Link(token, now)
		if err != nil {
			return nil, nil, err
		}
		ch, err := st.SetPassword(token, passwordHash, now)
		if err != nil {
			return nil, nil, err
		}
		return afterApply(st, inv.MemberID), ch, nil
	}})
	if err != nil {
		return directory.Member{}, err
	}
	return res.(directory.Member), nil
}

// SetMemberRole changes a member's role in a unit; role "" removes the
// member from the unit. It answers the member as it now stands.
func (s *System) SetMemberRole(ctx context.Context, memberID, unitID, role string) (directory.Member, error) {
	res, err := s.askDirectory(ctx, &dirDecide{fn: func(st *directory.State, now time.Time) (any, directory.Change, error) {
		ch, err := st.SetRole(memberID, unitID, role, now)
		if err != nil {
			return nil, nil, err
		}
		return afterApply(st, memberID), ch, nil
	}})
	if err != nil {
		return directory.Member{}, err
	}
	return res.(directory.Member), nil
}

// afterApply is a result the directory actor computes once the change is
// applied (decide calls it): the member as it then stands.
func afterApply(st *directory.State, memberID string) func() any {
	return func() any {
		m, _ := st.Member(memberID)
		return m
	}
}
