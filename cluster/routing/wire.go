package routing

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"
	"time"

	"ticketd/event"
	"ticketd/idempotency"
)

// The forwarded requests and their answers travel in a framing of their
// own around gob of each concrete value (wireCodec). Gob alone, with a new
// encoder and decoder per message, sends and compiles every type
// definition on every message, which cost a forwarding node more CPU than
// the command itself; here each concrete type keeps one encoder, whose
// definitions are sent with every message but built once, and decoders
// that have read them, so a message only compiles what a node has not
// seen before.
//
// A message is 0x00 (never the first byte of a gob stream, which starts
// with a message's nonzero length), the format version (1), then:
//
//	request: eventID, createUnit (uvarint-prefixed), flags (1: the
//	         command is a storefront command; 2: it carries the record
//	         of its Idempotency-Key, http.KeyedWrite: its key
//	         (uvarint-prefixed), the 32-byte fingerprint, the expiry in
//	         unix nanoseconds and the status, both uvarint; 4: that key
//	         was claimed before, KeyedWrite.Retried; 8: the record's
//	         answer is not the result itself: KeyedWrite.View
//	         (uvarint-prefixed), then a byte 1 and KeyedWrite.Fixed, its
//	         status (uvarint), content type and body (uvarint-prefixed),
//	         or a byte 0. A node of a build before this flag reads the
//	         view as the value and refuses the request, rather than
//	         record the result as the answer), value
//	answer:  flags (1: moved, 2: result, 4: error), then for an error
//	         its kind byte, message and a flag byte (1: event.Error
//	         value follows), then the result value
//	value:   type name and gob of the value, each uvarint-prefixed; or,
//	         for the commands and results forwarded most, '!' and the
//	         name, then the value's binary form (event/wire.go: about 1
//	         µs a forwarded order against 16 in gob). A node of a build
//	         before these forms answers such a request with an error.
//
// A value whose type is not one of the registered commands and results,
// or holds an interface, travels as the whole message in plain gob
// (wireReq, wireResp), which the decoder also reads.
//
// Requests and answers travel in batches (asks.go): 0x00, 2 (wireBatch),
// the count (uvarint), then per request its id, its deadline in ms from
// the send (0: none; both uvarint) and the request as above
// (uvarint-prefixed), per answer its id and the answer as above.
const (
	wireMark    = 0x00
	wireVersion = 1
	wireBatch   = 2
	// wireBinary starts the name of a value sent in its binary form
	// (event.AppendWire) instead of gob; no Go type name starts with it.
	wireBinary = '!'
)

const (
	reqStorefront = 1 << iota
	reqKeyed
	reqRetried
	reqKeyedView
)

const (
	respMoved = 1 << iota
	respResult
	respErr
)

// wireTypes are the concrete types a value may name, by name.
var wireTypes = func() map[string]reflect.Type {
	m := map[string]reflect.Type{}
	add := func(t reflect.Type) {
		if t.Kind() == reflect.Interface || holdsInterface(t, map[reflect.Type]bool{}) {
			return
		}
		m[t.String()] = t
	}
	for _, t := range event.RegisteredTypes() {
		add(t)
	}
	add(reflect.TypeFor[event.Error]())
	return m
}()

// holdsInterface reports whether a value of t can hold an interface value,
// whose gob definitions are not sent before the value (see wireCodec).
func holdsInterface(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return holdsInterface(t.Elem(), seen)
	case reflect.Map:
		return holdsInterface(t.Key(), seen) || holdsInterface(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && holdsInterface(f.Type, seen) {
				return true
			}
		}
	}
	return false
}

// wireCodec keeps a gob encoder and decoders per concrete type (see the
// top of this file).
type wireCodec struct {
	mu   sync.Mutex
	encs map[reflect.Type]*typeEncoder
	decs map[decKey][]*typeDecoder // idle decoders
}

type typeEncoder struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	enc  *gob.Encoder
	defs []byte // the type definitions the encoder sent first
}

type decKey struct {
	t    reflect.Type
	defs string
}

// typeDecoder is a gob decoder that has read one set of type definitions;
// src is what it reads next.
type typeDecoder struct {
	src msgReader
	dec *gob.Decoder
}

// maxIdleDecoders bounds the idle decoders kept per type and definitions;
// maxDecoderKeys bounds how many such sets are kept (a peer of another
// build may send other definitions).
const (
	maxIdleDecoders = 8
	maxDecoderKeys  = 1024
)

// wireScratch holds the buffers binary forms are encoded in.
var wireScratch = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

var wire = &wireCodec{encs: map[reflect.Type]*typeEncoder{}, decs: map[decKey][]*typeDecoder{}}

// appendValue appends v as a value; ok false when its type cannot travel
// so (see wireTypes), or gob refuses it.
func (c *wireCodec) appendValue(dst []byte, v any) ([]byte, bool) {
	scratch := wireScratch.Get().(*[]byte)
	name, body, ok := event.AppendWire((*scratch)[:0], v)
	if ok {
		// Its binary form (event/wire.go), named with wireBinary first.
		dst = binary.AppendUvarint(dst, uint64(len(name)+1))
		dst = append(append(dst, wireBinary), name...)
		dst = appendBytes(dst, body)
	}
	if cap(body) <= 64<<10 {
		*scratch = body
		wireScratch.Put(scratch)
	}
	if ok {
		return dst, true
	}
	rv := reflect.ValueOf(v)
	if !rv.IsValid() || (rv.Kind() == reflect.Pointer && rv.IsNil()) {
		return dst, false
	}
	t := rv.Type()
	name = t.String()
	if wireTypes[name] != t {
		return dst, false
	}
	c.mu.Lock()
	te := c.encs[t]
	if te == nil {
		te = &typeEncoder{}
		te.enc = gob.NewEncoder(&te.buf)
		c.encs[t] = te
	}
	c.mu.Unlock()

	te.mu.Lock()
	defer te.mu.Unlock()
	te.buf.Reset()
	if err := te.enc.EncodeValue(rv); err != nil {
		// The encoder may have sent part of a definition: start afresh.
		te.enc, te.defs = gob.NewEncoder(&te.buf), nil
		return dst, false
	}
	out := te.buf.Bytes()
	defs, _, err := splitDefs(out)
	if err != nil {
		return dst, false
	}
	te.defs = append(te.defs, defs...)
	value := out[len(defs):]
	dst = appendBytes(dst, []byte(name))
	dst = binary.AppendUvarint(dst, uint64(len(te.defs)+len(value)))
	dst = append(dst, te.defs...)
	return append(dst, value...), true
}

// readValue reads a value written by appendValue from r.
func (c *wireCodec) readValue(r *wireReader) (any, error) {
	name, err := r.bytes()
	if err != nil {
		return nil, err
	}
	if len(name) > 0 && name[0] == wireBinary {
		body, err := r.bytes()
		if err != nil {
			return nil, err
		}
		v, err := event.ReadWire(string(name[1:]), body)
		if err != nil {
			return nil, fmt.Errorf("cluster: forwarded value: %w", err)
		}
		return v, nil
	}
	t, ok := wireTypes[string(name)]
	if !ok {
		return nil, fmt.Errorf("cluster: forwarded value of unknown type %q", name)
	}
	msg, err := r.bytes()
	if err != nil {
		return nil, err
	}
	defs, value, err := splitDefs(msg)
	if err != nil {
		return nil, err
	}
	key := decKey{t: t, defs: string(defs)}
	c.mu.Lock()
	var td *typeDecoder
	if idle := c.decs[key]; len(idle) > 0 {
		td = idle[len(idle)-1]
		c.decs[key] = idle[:len(idle)-1]
	}
	c.mu.Unlock()
	if td == nil {
		// A new decoder reads the definitions once.
		td = &typeDecoder{}
		td.dec = gob.NewDecoder(&td.src)
		value = msg
	}
	td.src.b = value
	pv := reflect.New(t)
	if err := td.dec.DecodeValue(pv); err != nil {
		return nil, fmt.Errorf("cluster: forwarded %s: %w", t, err)
	}
	if len(td.src.b) != 0 {
		return nil, fmt.Errorf("cluster: forwarded %s: %d bytes left", t, len(td.src.b))
	}
	c.mu.Lock()
	if idle, known := c.decs[key]; len(idle) < maxIdleDecoders && (known || len(c.decs) < maxDecoderKeys) {
		c.decs[key] = append(idle, td)
	}
	c.mu.Unlock()
	return pv.Elem().Interface(), nil
}

// splitDefs splits a gob stream into its leading type definitions and
// the rest: the definitions are the messages with a negative type id.
func splitDefs(b []byte) (defs, rest []byte, err error) {
	off := 0
	for off < len(b) {
		n, k := gobUint(b[off:])
		if k <= 0 || n == 0 || uint64(len(b)-off-k) < n {
			return nil, nil, errors.New("cluster: bad gob message")
		}
		id, j := gobUint(b[off+k:])
		if j <= 0 {
			return nil, nil, errors.New("cluster: bad gob type id")
		}
		if id&1 == 0 { // a non-negative id: a value
			break
		}
		off += k + int(n)
	}
	return b[:off], b[off:], nil
}

// gobUint reads one of gob's unsigned integers: a byte below 0x80 is the
// value, else the negated count of the big-endian bytes that follow.
func gobUint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	if b[0] < 0x80 {
		return uint64(b[0]), 1
	}
	n := -int(int8(b[0]))
	if n > 8 || len(b) < 1+n {
		return 0, 0
	}
	var x uint64
	for _, d := range b[1 : 1+n] {
		x = x<<8 | uint64(d)
	}
	return x, 1 + n
}

// msgReader is what a typeDecoder reads: one message at a time. It is an
// io.ByteReader, so gob reads it without a buffer of its own that would
// read ahead.
type msgReader struct{ b []byte }

func (r *msgReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

func (r *msgReader) ReadByte() (byte, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c, nil
}

// wireReader reads the framing; a malformed message is an error.
type wireReader struct{ b []byte }

var errShortWire = errors.New("cluster: forwarded message cut short")

func (r *wireReader) byte() (byte, error) {
	if len(r.b) == 0 {
		return 0, errShortWire
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c, nil
}

func (r *wireReader) bytes() ([]byte, error) {
	n, k := binary.Uvarint(r.b)
	if k <= 0 || uint64(len(r.b)-k) < n {
		return nil, errShortWire
	}
	v := r.b[k : k+int(n)]
	r.b = r.b[k+int(n):]
	return v, nil
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// encodeReq encodes a forwarded request.
func encodeReq(req *wireReq) ([]byte, error) {
	cmd, flags := any(req.Cmd), byte(0)
	if sf, ok := cmd.(event.Storefront); ok {
		cmd, flags = sf.Cmd, reqStorefront
	}
	if req.Keyed != nil {
		flags |= reqKeyed
		if req.Keyed.Retried {
			flags |= reqRetried
		}
		if req.Keyed.View != "" || req.Keyed.Fixed != nil {
			flags |= reqKeyedView
		}
	}
	b := []byte{wireMark, wireVersion}
	b = appendBytes(b, []byte(req.EventID))
	b = appendBytes(b, []byte(req.CreateUnit))
	b = append(b, flags)
	if k := req.Keyed; k != nil {
		b = appendBytes(b, k.Key)
		b = append(b, k.FP[:]...)
		b = binary.AppendUvarint(b, uint64(k.Expires.UnixNano()))
		b = binary.AppendUvarint(b, uint64(k.Status))
		if flags&reqKeyedView != 0 {
			b = appendBytes(b, []byte(k.View))
			if f := k.Fixed; f != nil {
				b = append(b, 1)
				b = binary.AppendUvarint(b, uint64(f.Status))
				b = appendBytes(b, []byte(f.ContentType))
				b = appendBytes(b, f.Body)
			} else {
				b = append(b, 0)
			}
		}
	}
	if b, ok := wire.appendValue(b, cmd); ok {
		return b, nil
	}
	var body bytes.Buffer
	err := gob.NewEncoder(&body).Encode(req)
	return body.Bytes(), err
}

// decodeReq decodes what encodeReq encoded.
func decodeReq(b []byte, req *wireReq) error {
	if len(b) == 0 || b[0] != wireMark {
		return gob.NewDecoder(bytes.NewReader(b)).Decode(req)
	}
	r := &wireReader{b: b[1:]}
	if v, err := r.byte(); err != nil || v != wireVersion {
		return fmt.Errorf("cluster: forwarded request of format %d", v)
	}
	id, err := r.bytes()
	if err != nil {
		return err
	}
	unit, err := r.bytes()
	if err != nil {
		return err
	}
	flags, err := r.byte()
	if err != nil {
		return err
	}
	var keyed *idempotency.KeyedWrite
	if flags&reqKeyed != 0 {
		if keyed, err = readKeyed(r); err != nil {
			return err
		}
		keyed.Retried = flags&reqRetried != 0
		if flags&reqKeyedView != 0 {
			if err := readKeyedView(r, keyed); err != nil {
				return err
			}
		}
	}
	v, err := wire.readValue(r)
	if err != nil {
		return err
	}
	cmd, ok := v.(event.Command)
	if !ok {
		return fmt.Errorf("cluster: forwarded %T is not a command", v)
	}
	if flags&reqStorefront != 0 {
		cmd = event.Storefront{Cmd: cmd}
	}
	*req = wireReq{EventID: string(id), CreateUnit: string(unit), Cmd: cmd, Keyed: keyed}
	return nil
}

// readKeyed reads a request's http.KeyedWrite (see encodeReq).
func readKeyed(r *wireReader) (*idempotency.KeyedWrite, error) {
	key, err := r.bytes()
	if err != nil {
		return nil, err
	}
	if len(r.b) < 32 {
		return nil, errShortWire
	}
	k := &idempotency.KeyedWrite{Key: bytes.Clone(key)}
	copy(k.FP[:], r.b[:32])
	r.b = r.b[32:]
	exp, n := binary.Uvarint(r.b)
	if n <= 0 {
		return nil, errShortWire
	}
	r.b = r.b[n:]
	status, n := binary.Uvarint(r.b)
	if n <= 0 || status > 999 {
		return nil, errShortWire
	}
	r.b = r.b[n:]
	k.Expires, k.Status = time.Unix(0, int64(exp)), int(status)
	return k, nil
}

// readKeyedView reads what a KeyedWrite's answer is made of, View and
// Fixed (see encodeReq).
func readKeyedView(r *wireReader, k *idempotency.KeyedWrite) error {
	view, err := r.bytes()
	if err != nil {
		return err
	}
	k.View = string(view)
	fixed, err := r.byte()
	if err != nil || fixed == 0 {
		return err
	}
	status, n := binary.Uvarint(r.b)
	if n <= 0 || status > 999 {
		return errShortWire
	}
	r.b = r.b[n:]
	ct, err := r.bytes()
	if err != nil {
		return err
	}
	body, err := r.bytes()
	if err != nil {
		return err
	}
	k.Fixed = &idempotency.StoredResponse{Status: int(status), ContentType: string(ct), Body: bytes.Clone(body), Durable: true}
	return nil
}

// encodeResp encodes an answer to a forwarded request.
func encodeResp(resp *wireResp) ([]byte, error) {
	flags := byte(0)
	if resp.Moved {
		flags |= respMoved
	}
	if resp.Result != nil {
		flags |= respResult
	}
	if resp.Err != nil {
		flags |= respErr
	}
	b, ok := []byte{wireMark, wireVersion, flags}, true
	if e := resp.Err; e != nil {
		b = append(b, byte(e.Kind))
		b = appendBytes(b, []byte(e.Msg))
		if e.Event == nil {
			b = append(b, 0)
		} else {
			b = append(b, 1)
			b, ok = wire.appendValue(b, *e.Event)
		}
	}
	if ok && resp.Result != nil {
		b, ok = wire.appendValue(b, resp.Result)
	}
	if ok {
		return b, nil
	}
	var body bytes.Buffer
	err := gob.NewEncoder(&body).Encode(resp)
	return body.Bytes(), err
}

// decodeResp decodes what encodeResp encoded.
func decodeResp(b []byte, resp *wireResp) error {
	if len(b) == 0 || b[0] != wireMark {
		return gob.NewDecoder(bytes.NewReader(b)).Decode(resp)
	}
	r := &wireReader{b: b[1:]}
	if v, err := r.byte(); err != nil || v != wireVersion {
		return fmt.Errorf("cluster: forwarded answer of format %d", v)
	}
	flags, err := r.byte()
	if err != nil {
		return err
	}
	out := wireResp{Moved: flags&respMoved != 0}
	if flags&respErr != 0 {
		kind, err := r.byte()
		if err != nil {
			return err
		}
		msg, err := r.bytes()
		if err != nil {
			return err
		}
		out.Err = &wireErr{Kind: errKind(kind), Msg: string(msg)}
		hasEvent, err := r.byte()
		if err != nil {
			return err
		}
		if hasEvent == 1 {
			v, err := wire.readValue(r)
			if err != nil {
				return err
			}
			ee, ok := v.(event.Error)
			if !ok {
				return fmt.Errorf("cluster: forwarded error is a %T", v)
			}
			out.Err.Event = &ee
		}
	}
	if flags&respResult != 0 {
		if out.Result, err = wire.readValue(r); err != nil {
			return err
		}
	}
	*resp = out
	return nil
}
