package shell

import (
	"testing"

	"github.com/stretchr/testify/require"

	"ticketd/persistence"
)

// TestSessionPrefixesAreTheSchemas holds the shared sessions' key prefixes,
// spelled out here because a front door imports no store package, to the
// key schema that lists them (persistence/schema.go).
func TestSessionPrefixesAreTheSchemas(t *testing.T) {
	require.Equal(t, persistence.PrefixSession, sessPrefix)
	require.Equal(t, persistence.PrefixSessionSeen, sessSeenPrefix)
	require.Equal(t, persistence.PrefixSessionEnd, sessEndPrefix)
}
