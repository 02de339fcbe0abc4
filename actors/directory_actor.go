package actors

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"ticketd/ask"
	"ticketd/directory"
	"ticketd/persistence"
)

const directoryStream = "directory"

// ErrNotFound is answered for an unknown business unit or key.
var ErrNotFound = directory.ErrNotFound

// dirActor owns the directory machine and its log stream. Readers use the
// immutable view it publishes after each durable change.
type dirActor struct {
	sys *System
	st  *directory.State
	com committer
	// failed is the sync failure after which the state is ahead of the
	// log: every later request is answered with it.
	failed error

	// Cluster mode (see SharedLog): the log every node shares, the seq of
	// the last record applied, and the index entries of the change being
	// decided.
	shared  SharedLog
	seq     uint64
	pending []persistence.IndexEntry
}

type dirCreateUnit struct {
	name string
	rec  *ask.Recorder
}

type dirCreateKey struct {
	key    directory.Key
	secret string
	rec    *ask.Recorder
}

type dirRevokeKey struct {
	id  string
	rec *ask.Recorder
}

func (s *System) startDirectory() error {
	if s.cfg.Directory != nil {
		return s.startShared()
	}
	st := directory.New()
	err := s.store.Replay(directoryStream, 0, func(seq uint64, rec []byte) error {
		ch, err := directory.Unmarshal(rec)
		if err != nil {
			return fmt.Errorf("record %d: %w", seq, err)
		}
		st.Apply(ch)
		return nil
	})
	if err != nil {
		return fmt.Errorf("actors: replay directory: %w", err)
	}
	last, err := s.store.LastSeq(directoryStream)
	if err != nil {
		return fmt.Errorf("actors: directory seq: %w", err)
	}
	s.dirView.Store(st.Clone())
	props := actor.PropsFromProducer(func() actor.Actor {
		return &dirActor{sys: s, st: st, com: committer{seq: last}}
	})
	pid, err := s.as.Root.SpawnNamed(props, "directory")
	if err != nil {
		return fmt.Errorf("actors: spawn directory: %w", err)
	}
	s.dirPID = pid
	return nil
}

func (a *dirActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		if a.shared != nil {
			return
		}
		self := ctx.Self()
		root := a.sys.as.Root
		a.com.log = a.sys.store.Log()
		a.com.stream = directoryStream
		a.com.post = func(msg any) { root.Send(self, msg) }
		a.com.wg = &a.sys.wg
	case *synced:
		if a.failed != nil {
			return
		}
		if err := a.com.done(ctx, m); err != nil {
			// The directory cannot go on with state ahead of its log; the
			// store has failed too, and the service restarts from the log.
			a.sys.cfg.Logger.Error("directory sync failed", "err", err)
			a.failed = fmt.Errorf("%w: directory: %w", ask.ErrUnavailable, err)
			a.com.fail(ctx, func() any { return &response{err: a.failed} })
		}
	case *dirSync:
		if ctx.Sender() == nil {
			a.sys.dirNoticed.Store(false)
		}
		err := a.catchUp()
		if err != nil {
			a.sys.cfg.Logger.Warn("directory: read of the shared log failed", "err", err)
			err = fmt.Errorf("%w: directory: %w", ask.ErrUnavailable, err)
		}
		if ctx.Sender() != nil {
			ctx.Respond(&response{err: err})
		}
	case *dirCreateUnit:
		a.decide(ctx, m.rec, func() (any, directory.Change, error) {
			ch, err := a.st.CreateUnit(a.sys.cfg.IDs.New("bu_"), m.name, a.sys.cfg.Now())
			if err != nil {
				return nil, nil, err
			}
			return ch.(directory.UnitCreated).Unit, ch, nil
		})
	case *dirCreateKey:
		a.decide(ctx, m.rec, func() (any, directory.Change, error) {
			ch, err := a.st.CreateKey(m.key, m.secret)
			if err != nil {
				return nil, nil, err
			}
			return ch.(directory.KeyCreated).Key, ch, nil
		})
	case *dirDecide:
		a.decideOwing(ctx, m.rec, a.decideFn(m), func(seq uint64) { a.owe(m, seq) })
	case *dirRevokeKey:
		a.decide(ctx, m.rec, func() (any, directory.Change, error) {
			ch, err := a.st.RevokeKey(m.id, a.sys.cfg.Now())
			if err == nil && ch == nil { // already revoked
				k, _ := a.st.Key(m.id)
				return k, nil, nil
			}
			return nil, ch, err
		})
	}
}

// decide applies the change fn decides, logs it, and answers once durable
// with fn's result (or, for a nil result, the key named by a revocation);
// rec (may be nil) puts the request's own entry in the change's batch.
func (a *dirActor) decide(ctx actor.Context, rec *ask.Recorder, fn func() (any, directory.Change, error)) {
	a.decideOwing(ctx, rec, fn, nil)
}

// decideOwing is decide that lets owe add to the change's batch (its
// a link's mail) once the change is appended at seq.
func (a *dirActor) decideOwing(ctx actor.Context, rec *ask.Recorder, fn func() (any, directory.Change, error), owe func(seq uint64)) {
	if a.shared != nil {
		a.decideShared(ctx, rec, fn, owe)
		return
	}
	if a.failed != nil {
		ctx.Respond(&response{err: a.failed})
		return
	}
	res, ch, err := fn()
	if err != nil {
		a.com.reply(ctx, ctx.Sender(), &response{err: err})
		return
	}
	if ch != nil {
		a.st.Apply(ch)
		rec, err := directory.Marshal(ch)
		if err != nil {
			panic(fmt.Sprintf("actors: encode directory change: %v", err))
		}
		seq := a.com.append(rec)
		if owe != nil {
			owe(seq)
		}
		view := a.st.Clone()
		a.com.afterDurable(func() { a.sys.dirView.Store(view) })
	}
	if f, ok := res.(func() any); ok { // a result read after the change
		res = f()
	}
	if res == nil { // a revocation answers with the key as it now stands
		if r, ok := ch.(directory.KeyRevoked); ok {
			res, _ = a.st.Key(r.KeyID)
		}
	}
	if ch != nil {
		a.com.record(rec, res)
	}
	a.com.reply(ctx, ctx.Sender(), &response{result: res})
	a.com.kick()
}

func (s *System) askDirectory(ctx context.Context, msg any) (any, error) {
	if err := s.store.Err(); err != nil {
		return nil, fmt.Errorf("%w: directory: %w", ask.ErrUnavailable, err)
	}
	res, err := s.reply.Request(ctx, s.dirPID, msg, s.cfg.AskTimeout, s.store.Failed())
	if err != nil {
		return nil, s.unavailable("directory", err)
	}
	r, ok := res.(*response)
	if !ok {
		return nil, fmt.Errorf("%w: directory answered %T", ask.ErrUnavailable, res)
	}
	return r.result, r.err
}

// CreateUnit creates a business unit.
func (s *System) CreateUnit(ctx context.Context, name string) (directory.Unit, error) {
	res, err := s.askDirectory(ctx, &dirCreateUnit{name: name, rec: ask.RecorderOf(ctx)})
	if err != nil {
		return directory.Unit{}, err
	}
	return res.(directory.Unit), nil
}

// NewKeySpec describes a key to create.
type NewKeySpec struct {
	UnitID    string
	Type      string // directory.Secret or directory.Publishable
	Name      string
	Origins   []string
	Version   string
	ExpiresAt *time.Time
}

// CreatedKey is what CreateKey's Recorder (WithRecorder) is called with:
// the key's record and the whole key.
type CreatedKey struct {
	Key    directory.Key
	Secret string
}

// CreateKey creates an API key and returns its record and the whole key,
// which for a secret key is never available again.
func (s *System) CreateKey(ctx context.Context, spec NewKeySpec) (directory.Key, string, error) {
	prefix := "sk_"
	if spec.Type == directory.Publishable {
		prefix = "pk_"
	}
	secret := prefix + s.cfg.IDs.Code(32)
	k := directory.Key{
		ID:        s.cfg.IDs.New("key_"),
		UnitID:    spec.UnitID,
		Type:      spec.Type,
		Name:      spec.Name,
		Origins:   spec.Origins,
		Version:   spec.Version,
		CreatedAt: s.cfg.Now().UTC(),
		ExpiresAt: spec.ExpiresAt,
	}
	// The answer holds the whole key, which the result does not.
	rec := withResult(ask.RecorderOf(ctx), func(res any) any {
		k, _ := res.(directory.Key)
		return CreatedKey{Key: k, Secret: secret}
	})
	res, err := s.askDirectory(ctx, &dirCreateKey{key: k, secret: secret, rec: rec})
	if err != nil {
		return directory.Key{}, "", err
	}
	return res.(directory.Key), secret, nil
}

// RevokeKey revokes a key at once and returns it.
func (s *System) RevokeKey(ctx context.Context, keyID string) (directory.Key, error) {
	res, err := s.askDirectory(ctx, &dirRevokeKey{id: keyID, rec: ask.RecorderOf(ctx)})
	if err != nil {
		return directory.Key{}, err
	}
	k, ok := res.(directory.Key)
	if !ok {
		return directory.Key{}, errors.New("actors: revoke answered no key")
	}
	return k, nil
}

// withResult is rec whose record is made of what result makes of the
// write's result (an answer that holds more than the result: a created
// key's secret, a device's setup code); nil for nil.
func withResult(rec *ask.Recorder, result func(res any) any) *ask.Recorder {
	if rec == nil || rec.Value == nil {
		return rec
	}
	w := *rec
	inner := rec.Value
	w.Value = func(res any) []byte { return inner(result(res)) }
	return &w
}

// Directory returns the current read view of the directory. It is
// immutable: callers must not modify it.
func (s *System) Directory() *directory.State { return s.dirView.Load() }
