package actors

import (
	"context"
	"time"

	"ticketd/directory"
)

// dirDecide asks the directory actor to decide with fn against its state
// at now; fn answers the result to reply with and the change to log (nil:
// nothing changes). The console's member operations use it, so each is one
// function here rather than one message type.
type dirDecide struct {
	fn func(st *directory.State, now time.Time) (any, directory.Change, error)
}

func (a *dirActor) decideFn(m *dirDecide) func() (any, directory.Change, error) {
	return func() (any, directory.Change, error) { return m.fn(a.st, a.sys.cfg.Now()) }
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
}

// CreateLink makes an invitation (spec.MemberID empty) or a password
// reset link and returns its record and its token, which is never
// available again (only its hash is kept).
func (s *System) CreateLink(ctx context.Context, spec LinkSpec) (directory.Invitation, string, error) {
	token := s.cfg.IDs.Code(40)
	inv := directory.Invitation{ID: s.cfg.IDs.New("inv_"), UnitID: spec.UnitID, Email: spec.Email, Role: spec.Role,
		Hash: directory.HashToken(token), By: spec.By}
	res, err := s.askDirectory(ctx, &dirDecide{fn: func(st *directory.State, now time.Time) (any, directory.Change, error) {
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
		return ch.(directory.InvitationCreated).Invitation, ch, nil
	}})
	if err != nil {
		return directory.Invitation{}, "", err
	}
	return res.(directory.Invitation), token, nil
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
