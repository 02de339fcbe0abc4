package feed

import (
	"encoding/binary"
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
// seq (byte order is seq order). Value, version 1:
//
//	byte 0     version (1)
//	byte 1     type (event.FeedTypeCode)
//	bytes 2-9  when the change happened, Unix nanoseconds, big-endian int64
//	rest       the record as its GET answered it just after the change
//	           (JSON, in the current API version)
const Prefix = persistence.PrefixFeed

// version is the version byte of a feed entry's value.
const version = 1

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

// decode reads a feed entry's key (after the event's prefix) and value.
func decode(rest, v []byte) (event.FeedItem, error) {
	seq, err := strconv.ParseUint(string(rest), 16, 64)
	if err != nil || len(rest) != 16 {
		return event.FeedItem{}, fmt.Errorf("feed: key %q", rest)
	}
	if len(v) < headerLen || v[0] != version {
		return event.FeedItem{}, fmt.Errorf("feed: entry %d: unknown format", seq)
	}
	typ := event.FeedTypeOf(v[1])
	if typ == "" {
		return event.FeedItem{}, fmt.Errorf("feed: entry %d: unknown type %d", seq, v[1])
	}
	at := time.Unix(0, int64(binary.BigEndian.Uint64(v[2:10]))).UTC()
	return event.FeedItem{Seq: seq, Type: typ, At: at, Object: v[headerLen:]}, nil
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
