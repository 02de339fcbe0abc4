package snapshots

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Envelope constants; see the package documentation for the byte format.
const (
	// Magic opens every envelope.
	Magic = "TKSN"
	// Version is the envelope format version this package writes and reads.
	Version byte = 1
	// HeaderLen is the size of the envelope header.
	HeaderLen = 33
	// ChunkBytes is the default payload bytes per stored part. Each part is
	// committed on its own, so it is also what a log commit of an actor may
	// wait behind while a snapshot is saved (BenchmarkCommitLatencyDuringSave:
	// 1 MiB parts in batches of 8 cost such commits about 10x more). Older
	// snapshots declare their own chunk size and stay readable.
	ChunkBytes = 256 << 10
	// MaxChunkBytes bounds the chunk size a header may declare.
	MaxChunkBytes = 8 << 20
	// MaxStateBytes bounds a snapshot's payload.
	MaxStateBytes = 1 << 30
)

// ErrCorrupt reports an envelope with a bad magic, length or checksum.
var ErrCorrupt = errors.New("snapshots: corrupt snapshot")

// ErrVersion reports an envelope of an unknown format version.
var ErrVersion = errors.New("snapshots: unknown snapshot version")

// ErrTooLarge reports a state above MaxStateBytes.
var ErrTooLarge = errors.New("snapshots: state too large")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// header is the decoded envelope header.
type header struct {
	seq        uint64
	length     uint64
	chunkBytes uint32
	crc        uint32
}

// parts returns the number of payload parts the header describes.
func (h header) parts() uint64 {
	return (h.length + uint64(h.chunkBytes) - 1) / uint64(h.chunkBytes)
}

// part returns payload part i (1..parts()) of state.
func (h header) part(state []byte, i uint64) []byte {
	lo := (i - 1) * uint64(h.chunkBytes)
	return state[lo:min(lo+uint64(h.chunkBytes), h.length)]
}

func appendHeader(dst []byte, h header) []byte {
	start := len(dst)
	dst = append(dst, Magic...)
	dst = append(dst, Version)
	dst = binary.BigEndian.AppendUint64(dst, h.seq)
	dst = binary.BigEndian.AppendUint64(dst, h.length)
	dst = binary.BigEndian.AppendUint32(dst, h.chunkBytes)
	dst = binary.BigEndian.AppendUint32(dst, h.crc)
	return binary.BigEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

func decodeHeader(b []byte) (header, error) {
	if len(b) < HeaderLen {
		return header{}, fmt.Errorf("%w: header is %d bytes", ErrCorrupt, len(b))
	}
	if string(b[:4]) != Magic {
		return header{}, fmt.Errorf("%w: bad magic", ErrCorrupt)
	}
	if sum := binary.BigEndian.Uint32(b[29:33]); sum != crc32.Checksum(b[:29], castagnoli) {
		return header{}, fmt.Errorf("%w: header checksum", ErrCorrupt)
	}
	// The version is checked after the checksum so that a flipped bit reads
	// as corruption and only a real future format reads as ErrVersion.
	if b[4] != Version {
		return header{}, fmt.Errorf("%w: %d", ErrVersion, b[4])
	}
	h := header{
		seq:        binary.BigEndian.Uint64(b[5:13]),
		length:     binary.BigEndian.Uint64(b[13:21]),
		chunkBytes: binary.BigEndian.Uint32(b[21:25]),
		crc:        binary.BigEndian.Uint32(b[25:29]),
	}
	if h.length > MaxStateBytes {
		return header{}, fmt.Errorf("%w: payload length %d", ErrCorrupt, h.length)
	}
	if h.chunkBytes == 0 || h.chunkBytes > MaxChunkBytes {
		return header{}, fmt.Errorf("%w: chunk size %d", ErrCorrupt, h.chunkBytes)
	}
	return h, nil
}

// EncodeEnvelope returns the contiguous envelope of payload taken at seq.
// Save stores the same bytes split into parts.
func EncodeEnvelope(seq uint64, payload []byte) ([]byte, error) {
	if len(payload) > MaxStateBytes {
		return nil, fmt.Errorf("%w: %d bytes", ErrTooLarge, len(payload))
	}
	h := header{seq: seq, length: uint64(len(payload)), chunkBytes: ChunkBytes, crc: crc32.Checksum(payload, castagnoli)}
	out := make([]byte, 0, HeaderLen+len(payload))
	out = appendHeader(out, h)
	return append(out, payload...), nil
}

// DecodeEnvelope checks a contiguous envelope and returns its seq and
// payload. The payload aliases b.
func DecodeEnvelope(b []byte) (seq uint64, payload []byte, err error) {
	h, err := decodeHeader(b)
	if err != nil {
		return 0, nil, err
	}
	if uint64(len(b)-HeaderLen) != h.length {
		return 0, nil, fmt.Errorf("%w: payload is %d bytes, header says %d", ErrCorrupt, len(b)-HeaderLen, h.length)
	}
	payload = b[HeaderLen:]
	if crc32.Checksum(payload, castagnoli) != h.crc {
		return 0, nil, fmt.Errorf("%w: payload checksum", ErrCorrupt)
	}
	return h.seq, payload, nil
}
