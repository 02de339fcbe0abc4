package persistence

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// Key namespaces; see the package documentation for the full schema.
const (
	nsLog      byte = 'l'
	nsIndex    byte = 'x'
	nsSnapshot byte = 's'
	streamSep  byte = 0x00
)

// MaxStreamLen bounds a stream name so keys stay small.
const MaxStreamLen = 256

// MaxKeyLen bounds an index key.
const MaxKeyLen = 1024

// ErrBadStream reports a stream name that is empty, too long or contains 0x00.
var ErrBadStream = errors.New("persistence: bad stream name")

// ErrBadKey reports an index key that is empty or too long.
var ErrBadKey = errors.New("persistence: bad index key")

func checkStream(stream string) error {
	if len(stream) == 0 || len(stream) > MaxStreamLen || strings.IndexByte(stream, streamSep) >= 0 {
		return fmt.Errorf("%w: %q", ErrBadStream, stream)
	}
	return nil
}

func checkKey(key []byte) error {
	if len(key) == 0 || len(key) > MaxKeyLen {
		return fmt.Errorf("%w: length %d", ErrBadKey, len(key))
	}
	return nil
}

// streamPrefix is ns | stream | 0x00, the common prefix of a stream's keys.
func streamPrefix(ns byte, stream string) []byte {
	k := make([]byte, 0, 1+len(stream)+1+8+4)
	k = append(k, ns)
	k = append(k, stream...)
	return append(k, streamSep)
}

// streamEnd is the exclusive upper bound of every key with streamPrefix(ns, stream).
func streamEnd(ns byte, stream string) []byte {
	k := streamPrefix(ns, stream)
	k[len(k)-1] = streamSep + 1
	return k
}

// logKey is the key of record seq of stream.
func logKey(stream string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(streamPrefix(nsLog, stream), seq)
}

// appendLogKey appends the key of record seq of stream to k.
func appendLogKey(k []byte, stream string, seq uint64) []byte {
	k = append(k, nsLog)
	k = append(k, stream...)
	k = append(k, streamSep)
	return binary.BigEndian.AppendUint64(k, seq)
}

// logBound is the exclusive upper bound of records with seq <= through.
func logBound(stream string, through uint64) []byte {
	if through == ^uint64(0) {
		return streamEnd(nsLog, stream)
	}
	return logKey(stream, through+1)
}

func indexKey(key []byte) []byte {
	k := make([]byte, 0, 1+len(key))
	k = append(k, nsIndex)
	return append(k, key...)
}

// prefixEnd returns the smallest key greater than every key with prefix p,
// or nil when there is none (p is all 0xff).
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// SnapshotPrefix returns 's' | stream | 0x00, the prefix of every snapshot key
// of stream. It is for package snapshots, which owns that namespace.
func SnapshotPrefix(stream string) ([]byte, error) {
	if err := checkStream(stream); err != nil {
		return nil, err
	}
	return streamPrefix(nsSnapshot, stream), nil
}

// SnapshotKey returns 's' | stream | 0x00 | seq | part, the key of one part of
// the snapshot of stream taken at seq.
func SnapshotKey(stream string, seq uint64, part uint32) ([]byte, error) {
	if err := checkStream(stream); err != nil {
		return nil, err
	}
	k := binary.BigEndian.AppendUint64(streamPrefix(nsSnapshot, stream), seq)
	return binary.BigEndian.AppendUint32(k, part), nil
}

// ParseSnapshotKey splits a key made by SnapshotKey for stream.
func ParseSnapshotKey(stream string, key []byte) (seq uint64, part uint32, ok bool) {
	p := streamPrefix(nsSnapshot, stream)
	if len(key) != len(p)+12 || string(key[:len(p)]) != string(p) {
		return 0, 0, false
	}
	rest := key[len(p):]
	return binary.BigEndian.Uint64(rest), binary.BigEndian.Uint32(rest[8:]), true
}
