package http

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"
	"github.com/stretchr/testify/require"

	"ticketd/event"
	"ticketd/internal/jsonenc"
)

// goccyJSON is what the response encoder writes for v without the fast
// path: goccy's Encoder, its trailing newline cut.
func goccyJSON(t testing.TB, v any) []byte {
	var buf bytes.Buffer
	require.NoError(t, gojson.NewEncoder(&buf).Encode(v))
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// randText mixes what strings on the wire may hold: plain ASCII, JSON and
// HTML escapes, control characters, multi-byte runes, the two line
// separators encoding/json escapes, and invalid UTF-8.
func randText(r *rand.Rand) string {
	parts := []string{"a", "Zoë", "ord_01m80je09pzy", "@", " ", `"`, `\`, "/", "<", ">", "&", "\n", "\r", "\t",
		"\x00", "\x1f", "\x7f", "é", "日本", "😀", "\u2028", "\u2029", "\xff", "\xc3", "https://t.example/o/1?a=b&c=d"}
	var b strings.Builder
	for range r.IntN(6) {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	return b.String()
}

func randOptText(r *rand.Rand) *string {
	if r.IntN(3) == 0 {
		return nil
	}
	s := randText(r)
	return &s
}

func randMoney(r *rand.Rand) event.Money {
	switch r.IntN(4) {
	case 0:
		return 0
	case 1:
		return event.Money(r.IntN(100))
	case 2:
		return event.Money(r.Int64N(1_000_000_000_000_000))
	}
	return event.Money(r.IntN(100_000)) * 100
}

func randTime(r *rand.Rand) event.Time {
	zone := time.FixedZone("z", (r.IntN(27)-13)*3600)
	return event.Time{Time: time.Unix(r.Int64N(4_000_000_000), r.Int64N(1e9)).In(zone)}
}

func randOrder(r *rand.Rand) event.Order {
	o := event.Order{
		ID: randText(r), EventID: randText(r), OrderNumber: randText(r), Status: randText(r), Email: randText(r),
		Name: randOptText(r), TotalAmount: randMoney(r), Currency: randText(r), AlreadyRegistered: r.IntN(2) == 0,
		RegistrationID: randOptText(r), RedemptionCode: randOptText(r), PromotionCode: randOptText(r),
		DiscountAmount: randMoney(r), PaymentID: randOptText(r), OrderURL: randText(r), CheckoutURL: randOptText(r),
		PaymentURL: randOptText(r), SuccessURL: randOptText(r), CancelURL: randOptText(r),
		CreatedAt: randTime(r), UpdatedAt: randTime(r),
	}
	if r.IntN(5) > 0 {
		o.Items = make([]event.OrderItemView, r.IntN(4))
		for i := range o.Items {
			o.Items[i] = event.OrderItemView{ItemType: randText(r), ItemID: randText(r), Name: randText(r),
				Quantity: r.IntN(2000) - 1000, UnitPriceAmount: randMoney(r), Amount: randMoney(r)}
		}
	}
	if r.IntN(2) == 0 {
		at := randTime(r)
		o.HoldExpiresAt = &at
	}
	return o
}

func randStrings(r *rand.Rand) []string {
	switch r.IntN(3) {
	case 0:
		return nil
	case 1:
		return []string{}
	}
	out := make([]string, 1+r.IntN(3))
	for i := range out {
		out[i] = randText(r)
	}
	return out
}

func randCheckin(r *rand.Rand) event.CheckinResult {
	var access *event.Access
	if r.IntN(4) > 0 {
		access = &event.Access{Allowed: r.IntN(2) == 0, RequiredPerkIDs: randStrings(r), MissingPerkIDs: randStrings(r)}
	}
	return event.CheckinResult{
		Access: access,
		Checkin: event.Checkin{ID: randText(r), RegistrationID: randText(r), SubjectType: randText(r),
			SubjectID: randOptText(r), Method: randText(r), RegistrationEmail: randText(r),
			RegistrationName: randOptText(r), CheckedInAt: randTime(r)},
		AlreadyCheckedIn: r.IntN(2) == 0,
	}
}

func randOptInt(r *rand.Rand) *int {
	if r.IntN(3) == 0 {
		return nil
	}
	n := r.IntN(2_000_000) - 1000
	return &n
}

func randQueueStatus(r *rand.Rand) event.QueueStatus {
	q := event.QueueStatus{QueueID: randText(r), State: randText(r), Position: randOptInt(r),
		EstimatedWaitSeconds: randOptInt(r), RetryAfterSeconds: r.IntN(100) - 10, OnSaleAt: randTime(r)}
	if r.IntN(2) == 0 {
		q.QueueToken = randText(r)
	}
	if r.IntN(2) == 0 {
		at := randTime(r)
		q.AdmittedUntil = &at
	}
	return q
}

// randWord is one of the words a field holds (written as literals by
// appendVerdict and appendWord), a near miss of one, or any text.
func randWord(r *rand.Rand, words ...string) string {
	switch r.IntN(3) {
	case 0:
		return words[r.IntN(len(words))]
	case 1:
		w := []byte(words[r.IntN(len(words))])
		w[r.IntN(len(w))] ^= byte(1 << r.IntN(8)) // may make it invalid UTF-8 or a control character
		return string(w)
	}
	return randText(r)
}

// randBatchTime is the time of a check-in in a door answer: mostly one of
// the batch's few instants (timeText keeps the last second's text), the
// same second at other nanoseconds and in other zones, or any time,
// including before 1970, before year 1 and after 9999.
func randBatchTime(r *rand.Rand, batch []event.Time) event.Time {
	switch r.IntN(6) {
	case 0, 1:
		return batch[r.IntN(len(batch))]
	case 2:
		t := batch[r.IntN(len(batch))].Time
		zone := time.FixedZone("z", (r.IntN(27)-13)*3600+r.IntN(2)*1800)
		return event.At(time.Unix(t.Unix(), r.Int64N(1e9)).In(zone))
	case 3:
		return event.At(time.Unix(r.Int64N(400_000_000_000)-200_000_000_000, r.Int64N(1e9)))
	}
	return randTime(r)
}

var (
	verdictWords = []string{event.VerdictAdmitted, event.VerdictAlreadyCheckedIn, event.VerdictRefused}
	subjectWords = []string{"event", "session", "venue"}
	methodWords  = []string{"scan", "manual"}
)

func randScanResults(r *rand.Rand) event.ScanResults {
	if r.IntN(10) == 0 {
		return event.ScanResults{}
	}
	batch := []event.Time{randTime(r), randTime(r)}
	out := event.ScanResults{Results: make([]event.ScanResult, r.IntN(8))}
	for i := range out.Results {
		res := event.ScanResult{ScanID: randText(r), Verdict: randWord(r, verdictWords...), Reason: randOptText(r),
			RegistrationID: randOptText(r)}
		if r.IntN(2) == 0 {
			c := randCheckin(r).Checkin
			c.SubjectType, c.Method = randWord(r, subjectWords...), randWord(r, methodWords...)
			c.CheckedInAt = randBatchTime(r, batch)
			c.DeviceID = randOptText(r)
			res.Checkin = &c
		}
		if r.IntN(2) == 0 {
			res.FirstCheckin = &event.FirstCheckin{ID: randText(r), SubjectType: randWord(r, subjectWords...),
				SubjectID: randOptText(r), CheckedInAt: randBatchTime(r, batch), DeviceID: randOptText(r)}
		}
		out.Results[i] = res
	}
	return out
}

// TestFastJSONMatchesGoccy: the hand-written encoders write byte for byte
// what goccy writes, for random orders, check-ins, scan verdicts and queue
// statuses.
func TestFastJSONMatchesGoccy(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed) // shown on failure: rand.NewPCG(seed, 5) replays it
	r := rand.New(rand.NewPCG(seed, 5))
	for i := range 30000 {
		var v any = randOrder(r)
		switch i % 4 {
		case 1:
			v = randCheckin(r)
		case 2:
			v = randQueueStatus(r)
		case 3:
			v = randScanResults(r)
		}
		requireAsGoccy(t, v)
	}
}

// requireAsGoccy asserts that AppendJSON writes v, after what the buffer
// holds, byte for byte as goccy does, and valid JSON.
func requireAsGoccy(t *testing.T, v any) {
	t.Helper()
	got, ok := AppendJSON([]byte("prefix"), v)
	require.True(t, ok)
	require.Equal(t, "prefix", string(got[:6]))
	want := goccyJSON(t, v)
	require.Equal(t, string(want), string(got[6:]), "value %#v", v)
	require.True(t, json.Valid(got[6:]))
}

// TestFastJSONDeclines: the shapes left to goccy, and other types, are not
// written by the fast path.
func TestFastJSONDeclines(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	o := randOrder(r)
	o.Responses = json.RawMessage(`{"company":"Acme"}`)
	for _, v := range []any{
		o,
		event.Order{Refunds: []event.Refund{{ID: "rf_1"}}},
		&event.Order{},
		map[string]any{"a": 1},
		nil,
	} {
		b, ok := AppendJSON([]byte("x"), v)
		require.False(t, ok, "%#v", v)
		require.Equal(t, "x", string(b))
	}
}

func BenchmarkOrderJSON(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	o := randOrder(r)
	b.Run("goccy", func(b *testing.B) {
		b.ReportAllocs()
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			_ = gojson.NewEncoder(&buf).Encode(o)
		}
	})
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = AppendJSON(buf[:0], o)
		}
	})
}

// crockford is the alphabet of the service's ULIDs.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// fakeULID is prefix and 26 characters that look like a ULID.
func fakeULID(r *rand.Rand, prefix string) string {
	b := []byte(prefix)
	for range 26 {
		b = append(b, crockford[r.IntN(len(crockford))])
	}
	return string(b)
}

// doorAnswer is a realistic door batch's answer of n scans, as the actor
// makes it (event/door.go, scanBatch.verdict): 80% admitted with the
// check-in made now (one instant for the batch, with nanoseconds), 20%
// already_checked_in with the earlier check-in, every one with its
// registration id; the device's doors are the event's (subjectId null).
// About one name in ten has a letter outside ASCII.
func doorAnswer(r *rand.Rand, n int) event.ScanResults {
	first := []string{"anna", "ben", "chloé", "david", "emma", "felix", "grace", "hugo", "iris", "jonas", "lena", "maxime"}
	last := []string{"smith", "müller", "garcia", "jones", "dubois", "rossi", "novak", "berg", "olsen", "keller"}
	title := func(s string) string { return strings.ToUpper(s[:1]) + s[1:] }
	now := event.At(time.Date(2026, 11, 29, 21, 40, 12, 345678901, time.UTC))
	dev := fakeULID(r, "dev_")
	out := event.ScanResults{Results: make([]event.ScanResult, n)}
	for i := range out.Results {
		f, l := first[r.IntN(len(first))], last[r.IntN(len(last))]
		regID := fakeULID(r, "reg_")
		res := event.ScanResult{ScanID: fmt.Sprintf("r%d-%d", r.IntN(8), i), RegistrationID: &regID}
		if r.IntN(5) > 0 {
			name := title(f) + " " + title(l)
			res.Verdict = event.VerdictAdmitted
			res.Checkin = &event.Checkin{ID: fakeULID(r, "chk_"), RegistrationID: regID, SubjectType: "event",
				Method: "scan", RegistrationEmail: fmt.Sprintf("%s.%s%d@example.com", f, l, r.IntN(1000)),
				RegistrationName: &name, CheckedInAt: now, DeviceID: &dev}
		} else {
			res.Verdict = event.VerdictAlreadyCheckedIn
			res.FirstCheckin = &event.FirstCheckin{ID: fakeULID(r, "chk_"), SubjectType: "event",
				CheckedInAt: event.At(now.Add(-time.Duration(r.Int64N(int64(3 * time.Hour))))), DeviceID: &dev}
		}
		out.Results[i] = res
	}
	return out
}

// doorAnswerScans is the batch size of BenchmarkScanResultsJSON: the most
// a device sends at once (event.RecordScans' maxItems).
const doorAnswerScans = 500

// BenchmarkScanResultsJSON writes a 500-scan door answer (door-sync's
// answer) into a fresh buffer ("fresh": the idempotent path, which starts
// from nil) and into one reused ("reused": the response's pooled body
// buffer once it has grown); ns/scan is the cost of one scan's verdict.
func BenchmarkScanResultsJSON(b *testing.B) {
	var rs any = doorAnswer(rand.New(rand.NewPCG(33, 1)), doorAnswerScans) // an any, as the server holds it
	b.Run("fresh", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			buf, _ := AppendJSON(nil, rs)
			n = len(buf)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*doorAnswerScans), "ns/scan")
		b.ReportMetric(float64(n), "bytes/answer")
	})
	b.Run("reused", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = AppendJSON(buf[:0], rs)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*doorAnswerScans), "ns/scan")
	})
}

// TestDoorAnswerMatchesGoccy: a realistic 500-scan door answer (the
// benchmark's) is written byte for byte as goccy writes it, into a fresh
// buffer and after a prefix in one too small.
func TestDoorAnswerMatchesGoccy(t *testing.T) {
	for seed := range uint64(5) {
		rs := doorAnswer(rand.New(rand.NewPCG(seed, 33)), doorAnswerScans)
		want := string(goccyJSON(t, rs))
		got, ok := AppendJSON(nil, rs)
		require.True(t, ok)
		require.Equal(t, want, string(got))
		got, _ = AppendJSON(append(make([]byte, 0, 10), "prefix"...), rs)
		require.Equal(t, "prefix"+want, string(got))
	}
}

// TestScanResultsLen: the size appendScanResultsJSON grows its buffer to
// is the answer's length exactly when no string needs escaping (the
// realistic answer, whose names hold letters outside ASCII, and random
// answers of plain strings), and never more than it otherwise.
func TestScanResultsLen(t *testing.T) {
	rs := doorAnswer(rand.New(rand.NewPCG(33, 1)), doorAnswerScans)
	require.Equal(t, len(appendScanResultsJSON(nil, &rs)), scanResultsLen(&rs))
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed) // shown on failure: rand.NewPCG(seed, 6) replays it
	r := rand.New(rand.NewPCG(seed, 6))
	plain := func(s string) string {
		return strings.Map(func(c rune) rune {
			if c < utf8.RuneSelf && !jsonenc.Plain[c] || c == utf8.RuneError || c == '\u2028' || c == '\u2029' {
				return 'x'
			}
			return c
		}, strings.ToValidUTF8(s, "y"))
	}
	for range 2000 {
		rs := randScanResults(r)
		if rs.Results == nil {
			continue
		}
		n := len(appendScanResultsJSON(nil, &rs))
		require.LessOrEqual(t, scanResultsLen(&rs), n)
		// The same answer with every string made plain.
		plainScanResults(&rs, plain)
		require.Equal(t, len(appendScanResultsJSON(nil, &rs)), scanResultsLen(&rs))
	}
}

// plainScanResults rewrites every string of rs with plain, and its times
// outside the years 0 to 9999 (a Time's JSON is longer) as 1970's first.
func plainScanResults(rs *event.ScanResults, plain func(string) string) {
	fourDigits := func(t *event.Time) {
		if y := t.UTC().Year(); y < 0 || y > 9999 {
			*t = event.At(time.Unix(0, 0))
		}
	}
	opt := func(p **string) {
		if *p != nil {
			s := plain(**p)
			*p = &s
		}
	}
	for i := range rs.Results {
		r := &rs.Results[i]
		r.ScanID, r.Verdict = plain(r.ScanID), plain(r.Verdict)
		opt(&r.Reason)
		opt(&r.RegistrationID)
		if c := r.Checkin; c != nil {
			c.ID, c.RegistrationID, c.SubjectType = plain(c.ID), plain(c.RegistrationID), plain(c.SubjectType)
			c.Method, c.RegistrationEmail = plain(c.Method), plain(c.RegistrationEmail)
			opt(&c.SubjectID)
			opt(&c.RegistrationName)
			opt(&c.DeviceID)
			fourDigits(&c.CheckedInAt)
		}
		if f := r.FirstCheckin; f != nil {
			f.ID, f.SubjectType = plain(f.ID), plain(f.SubjectType)
			opt(&f.SubjectID)
			opt(&f.DeviceID)
			fourDigits(&f.CheckedInAt)
		}
	}
}

// TestWordLiterals: the literals appendVerdict and appendWord write for
// the known words are what AppendString writes for them, and goccy.
func TestWordLiterals(t *testing.T) {
	for _, w := range verdictWords {
		want := `,"verdict":` + string(jsonenc.AppendString(nil, w))
		require.Equal(t, want, string(appendVerdict(nil, w)))
		require.Equal(t, want, `,"verdict":`+string(goccyJSON(t, w)))
	}
	for _, w := range append(slices.Clone(subjectWords), methodWords...) {
		require.Equal(t, string(jsonenc.AppendString(nil, w)), string(appendWord(nil, w)))
		require.Equal(t, string(goccyJSON(t, w)), string(appendWord(nil, w)))
	}
}

// TestTimeTextMatchesAppendJSON: a time written through timeText (the
// last second's text kept) is what Time.AppendJSON writes, for times that
// share a second at other nanoseconds, zones and monotonic readings, and
// for times before 1970, before year 1 and after 9999.
func TestTimeTextMatchesAppendJSON(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed) // shown on failure: rand.NewPCG(seed, 7) replays it
	r := rand.New(rand.NewPCG(seed, 7))
	edges := []time.Time{time.Unix(0, 0), time.Unix(-1, 999_999_999), time.Unix(-1, 0), time.Unix(0, 1),
		time.Unix(253402300799, 999_999_999), time.Unix(253402300800, 0), time.Time{}, time.Now(),
		time.Date(2026, 11, 29, 23, 59, 59, 999_999_999, time.FixedZone("z", -3600)), time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC)}
	var tt timeText
	var b []byte
	for i := range 100_000 {
		var at time.Time
		switch {
		case i < len(edges)*len(edges):
			at = edges[i/len(edges)] // each edge then each other, so every pair follows another
			if i%2 == 1 {
				at = edges[i%len(edges)]
			}
		case r.IntN(3) == 0:
			// Runs of the same second: in 2027, 1906, and before year 1.
			base := []int64{1_800_000_000, -2_000_000_000, -70_000_000_000}[r.IntN(3)]
			at = time.Unix(base+r.Int64N(3), r.Int64N(1e9)).In(time.FixedZone("z", (r.IntN(27)-13)*3600))
		default:
			at = randBatchTime(r, []event.Time{randTime(r)}).Time
		}
		b = tt.append(b[:0], event.At(at))
		require.Equal(t, string(event.At(at).AppendJSON(nil)), string(b), "%v", at)
	}
	var none *timeText
	require.Equal(t, `"1970-01-01T00:00:00Z"`, string(none.append(nil, event.At(time.Unix(0, 5)))))
}

func randPassPage(r *rand.Rand) event.PassPage {
	p := event.PassPage{HasMore: r.IntN(2) == 0, NextCursor: randText(r)}
	if r.IntN(6) == 0 {
		return p // data null
	}
	p.Data = make([]event.DoorPass, r.IntN(4))
	for i := range p.Data {
		d := event.DoorPass{RegistrationID: randText(r), CheckinCode: randText(r), Name: randOptText(r), Email: randText(r),
			RegistrationTypeID: randOptText(r), Status: randWord(r, "confirmed", "cancelled", "pending"), PerkIDs: randStrings(r),
			UpdatedAt: randTime(r)}
		if r.IntN(5) > 0 {
			d.Checkins = make([]event.PassCheckin, r.IntN(3))
			at := randTime(r)
			for j := range d.Checkins {
				if r.IntN(2) == 0 {
					at = randTime(r) // else the same second as the one before
				}
				d.Checkins[j] = event.PassCheckin{SubjectType: randWord(r, "event", "session", "venue"), SubjectID: randOptText(r),
					CheckedInAt: at, DeviceID: randOptText(r)}
			}
		}
		p.Data[i] = d
	}
	return p
}

// TestPassPageJSONMatchesGoccy: a page of passes is written byte for byte
// as goccy writes it, for random pages (null and empty lists, escapes,
// check-ins sharing a second).
func TestPassPageJSONMatchesGoccy(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed) // shown on failure: rand.NewPCG(seed, 7) replays it
	r := rand.New(rand.NewPCG(seed, 7))
	for range 20000 {
		v := randPassPage(r)
		requireAsGoccy(t, v)
	}
}
