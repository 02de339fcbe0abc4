package feed

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"ticketd/event"
	"ticketd/persistence"
)

// Prefix is the key prefix of the change feed (decisions §20): one
// entry per feed seq of an event, written in the batch of the change it
// describes (so it can never disagree with the state) and kept apart from
// the log, whose records a snapshot lets the log trim: an entry is
// deleted only by the retention trim (Trim), event.FeedRetention
// after it happened.
//
// Key: "feed/" + event id + "/" + 16 lower-case hex digits of the feed
// seq (byte order is seq order). Value, version 1 (one entry):
//
//	byte 0     version (1)
//	byte 1     type (event.FeedTypeCode)
//	bytes 2-9  when the change happened, Unix nanoseconds, big-endian int64
//	rest       the record as its GET answered it just after the change
//	           (JSON, in the current API version)
//
// Version 2 is a span: the n entries of one change (a batch of door
// scans' check-ins), all of one type and time, seqs key-n+1 .. key (the
// key is the span's last seq, so a scan from any position finds the span
// holding its next entry first):
//
//	byte 0     version (2)
//	bytes 1-9  type and time, as version 1
//	uvarint    n
//	rest       the span's data (event.AppendFeedSpan), from which the
//	           reader renders each entry's object (event.ExpandFeedSpan)
const Prefix = persistence.PrefixFeed

// version and versionSpan are the version bytes of a feed entry's value
// and of a span's.
const (
	version     = 1
	versionSpan = 2
)

// headerLen is the bytes of a feed entry's value before its object.
const headerLen = 10

// Key is the key of an event's feed entry seq.
func Key(eventID string, seq uint64) []byte {
	k := make([]byte, 0, len(Prefix)+len(eventID)+1+16)
	k = append(k, Prefix...)
	k = append(k, eventID...)
	k = append(k, '/')
	return appendHex16(k, seq)
}

func appendHex16(b []byte, v uint64) []byte {
	const digits = "0123456789abcdef"
	for i := 15; i >= 0; i-- {
		b = append(b, digits[(v>>(uint(i)*4))&0xf])
	}
	return b
}

// prefixOf is the prefix of every feed key of an event.
func prefixOf(eventID string) []byte { return []byte(Prefix + eventID + "/") }

// decode reads a feed record's key (after the event's prefix) and value:
// its entry, or a span's entries in seq order.
func decode(rest, v []byte) ([]event.FeedItem, error) {
	seq, err := strconv.ParseUint(string(rest), 16, 64)
	if err != nil || len(rest) != 16 {
		return nil, fmt.Errorf("feed: key %q", rest)
	}
	if len(v) < headerLen || (v[0] != version && v[0] != versionSpan) {
		return nil, fmt.Errorf("feed: entry %d: unknown format", seq)
	}
	typ := event.FeedTypeOf(v[1])
	if typ == "" {
		return nil, fmt.Errorf("feed: entry %d: unknown type %d", seq, v[1])
	}
	at := time.Unix(0, int64(binary.BigEndian.Uint64(v[2:10]))).UTC()
	if v[0] == version {
		return []event.FeedItem{{Seq: seq, Type: typ, At: at, Object: v[headerLen:]}}, nil
	}
	n, objs, err := expandSpan(typ, v)
	if err != nil || n > seq {
		return nil, fmt.Errorf("feed: span %d: %w", seq, err)
	}
	out := make([]event.FeedItem, n)
	for i := range out {
		out[i] = event.FeedItem{Seq: seq - n + 1 + uint64(i), Type: typ, At: at, Object: objs[i]}
	}
	return out, nil
}

// errSpan is a span value that does not decode.
var errSpan = errors.New("feed: corrupt span")

// spanLen is the entries of span value v (0 when it is corrupt).
func spanLen(v []byte) uint64 {
	if len(v) <= headerLen || v[0] != versionSpan {
		return 0
	}
	n, k := binary.Uvarint(v[headerLen:])
	if k <= 0 {
		return 0
	}
	return n
}

// expandSpan renders the objects of span value v of type typ.
func expandSpan(typ string, v []byte) (uint64, [][]byte, error) {
	n, k := binary.Uvarint(v[headerLen:])
	if k <= 0 || n == 0 {
		return 0, nil, errSpan
	}
	objs, err := event.ExpandFeedSpan(typ, v[headerLen+k:])
	if err != nil {
		return 0, nil, err
	}
	if uint64(len(objs)) != n {
		return 0, nil, errSpan
	}
	return n, objs, nil
}

// AppendSpan appends the stored value of a span of n entries of type typ
// (an event.FeedTypeCode) that happened at, whose objects render from
// span (event.AppendFeedSpan), to b; its key is the span's last seq.
func AppendSpan(b []byte, typ byte, at time.Time, n int, span []byte) []byte {
	b = append(b, versionSpan, typ)
	b = binary.BigEndian.AppendUint64(b, uint64(at.UnixNano()))
	b = binary.AppendUvarint(b, uint64(n))
	return append(b, span...)
}

// AppendValue appends the stored value of a feed entry of type typ (an
// event.FeedTypeCode) that happened at, about obj (the record's JSON), to
// b.
func AppendValue(b []byte, typ byte, at time.Time, obj []byte) []byte {
	b = append(b, version, typ)
	b = binary.BigEndian.AppendUint64(b, uint64(at.UnixNano()))
	return append(b, obj...)
}

// ValueLen is the length of the stored value of an entry whose object
// has n bytes.
func ValueLen(n int) int { return headerLen + n }

// at is when the entry of stored value v happened (v has headerLen bytes).
func at(v []byte) time.Time { return time.Unix(0, int64(binary.BigEndian.Uint64(v[2:10]))) }
