package actors

import (
	"context"
	"time"

	"ticketd/ask"
	"ticketd/directory"
)

// dirDecide asks the directory actor to decide with fn against its state
// at now; fn answers the result to reply with and the change to log (nil:
// nothing changes). The console's member operations use it, so each is one
// function here rather than one message type.
type dirDecide struct {
	fn func(st *directory.State, now time.Time) (any, directory.Change, error)
	// link, when set, is the link the change mails (an invitation or
	// reset link): written to the mail inbox in the change's own batch.
	link *linkMail
	// rec, when set, is the Idempotency-Key record of the request: put
	// with the change (see decideOwing).
	rec *ask.Recorder
}

// linkMail is the mail of a console link: the link made, its URL and its
// unit's name.
type linkMail struct {
	inv       directory.Invitation
	url, unit string
}

func (a *dirActor) decideFn(m *dirDecide) func() (any, directory.Change, error) {
	return func() (any, directory.Change, error) { return m.fn(a.st, a.sys.cfg.Now()) }
}

// owe writes the mail of m's link, if any, into the open batch of the
// change just appended at seq (Config.Links), and wakes the mailer once it
// is durable.
func (a *dirActor) owe(m *dirDecide, seq uint64) {
	if m.link == nil || a.sys.cfg.Links == nil {
		return
	}
	a.sys.cfg.Links.OweLink(dirWriter{a}, seq, m.link.inv, m.link.unit, m.link.url)
	if a.sys.cfg.OnOwed != nil && a.shared == nil {
		a.com.afterDurable(a.sys.cfg.OnOwed)
	}
}

// dirWriter writes into the directory actor's open batch.
type dirWriter struct{ a *dirActor }

func (w dirWriter) Put(key, value []byte) { w.a.put(key, value) }
func (w dirWriter) Delete(key []byte)     { panic("actors: directory owed work deletes nothing") }

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
	// link is also mailed through the durable mail inbox. The inbox entry
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
		msg.link = &linkMail{url: spec.LinkURL(token), unit: spec.UnitName}
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
		if msg.link != nil {
			msg.link.inv = created
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
