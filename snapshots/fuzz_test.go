package snapshots

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecodeEnvelope feeds arbitrary bytes to DecodeEnvelope: it must return
// an error or a payload that re-encodes to the same envelope, never panic.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, p := range [][]byte{nil, []byte("x"), bytes.Repeat([]byte("state"), 100)} {
		env, err := EncodeEnvelope(7, p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(env)
		f.Add(env[:len(env)-1])
		f.Add(env[:HeaderLen-1])
		f.Add(withVersion(append([]byte(nil), env...), 2))
	}
	f.Add([]byte{})
	f.Add([]byte(Magic))
	f.Fuzz(func(t *testing.T, b []byte) {
		seq, payload, err := DecodeEnvelope(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
				t.Fatalf("error %v is neither ErrCorrupt nor ErrVersion", err)
			}
			return
		}
		if len(payload) != len(b)-HeaderLen {
			t.Fatalf("payload is %d bytes of a %d-byte envelope", len(payload), len(b))
		}
		env, err := EncodeEnvelope(seq, payload)
		if err != nil {
			t.Fatal(err)
		}
		// Everything but the chunk size (and so the header sum) is determined
		// by seq and payload.
		if !bytes.Equal(env[:21], b[:21]) || !bytes.Equal(env[25:29], b[25:29]) || !bytes.Equal(env[HeaderLen:], b[HeaderLen:]) {
			t.Fatalf("decoded envelope does not re-encode to its bytes")
		}
	})
}
