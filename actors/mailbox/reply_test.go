package mailbox

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// echo answers every string with itself, and never answers "silence".
type echo struct{}

func (echo) Receive(ctx actor.Context) {
	if s, ok := ctx.Message().(string); ok && s != "silence" {
		ctx.Respond(s)
	}
}

func TestReplyPoolAnswersAndReusesBoxes(t *testing.T) {
	as := actor.NewActorSystem()
	defer as.Shutdown()
	p := NewReplyPool(as, 4)
	pid := as.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return echo{} }))
	for i := range 20 {
		msg := string(rune('a' + i))
		got, err := p.Request(context.Background(), pid, msg, 5*time.Second, nil)
		require.NoError(t, err)
		assert.Equal(t, msg, got)
	}
	assert.Len(t, p.idle, 1, "one request at a time needs one box")
}

func TestReplyPoolLateAnswerNeverReachesTheNextCaller(t *testing.T) {
	as := actor.NewActorSystem()
	defer as.Shutdown()
	p := NewReplyPool(as, 4)
	pid := as.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return echo{} }))
	_, err := p.Request(context.Background(), pid, "silence", 20*time.Millisecond, nil)
	assert.ErrorIs(t, err, ErrTimeout)
	assert.Empty(t, p.idle, "a box whose caller gave up is not reused")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = p.Request(ctx, pid, "silence", time.Minute, nil)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, p.idle)
}

func TestReplyPoolReportsAStoppedActor(t *testing.T) {
	as := actor.NewActorSystem()
	defer as.Shutdown()
	p := NewReplyPool(as, 4)
	pid := as.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return echo{} }))
	require.NoError(t, as.Root.StopFuture(pid).Wait())
	_, err := p.Request(context.Background(), pid, "hello", 5*time.Second, nil)
	assert.ErrorIs(t, err, actor.ErrDeadLetter)
}
