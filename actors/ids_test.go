package actors

import (
	"strings"
	"testing"

	"github.com/oklog/ulid/v2"
)

// TestRandomIDsNew: prefix + a lower-case ULID that parses back, one
// allocations (four before: String, ToLower, the concatenation).
func TestRandomIDsNew(t *testing.T) {
	id := randomIDs{}.New("chk_")
	rest, ok := strings.CutPrefix(id, "chk_")
	if !ok || len(rest) != ulid.EncodedSize || strings.ToLower(rest) != rest {
		t.Fatalf("id %q", id)
	}
	if _, err := ulid.ParseStrict(strings.ToUpper(rest)); err != nil {
		t.Fatalf("id %q: %v", id, err)
	}
	if a := testing.AllocsPerRun(100, func() { randomIDs{}.New("chk_") }); a > 2 {
		t.Errorf("%v allocations an id, want at most 2 (ulid.Make makes one)", a)
	}
}
