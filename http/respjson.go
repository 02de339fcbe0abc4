package http

import (
	"slices"
	"strconv"

	"ticketd/event"
	"ticketd/internal/jsonenc"
)

// AppendJSON appends the JSON of the hottest answers, written by hand: an
// order (every request of a flash sale answers one), a check-in (every
// scan), a door device's batch of scan verdicts and a waiting room's
// queue status (every join and poll of a drop). It writes exactly what
// goccy writes for them
// (TestFastJSONMatchesGoccy compares the two on random values), at a
// fraction of the cost: goccy calls every Money's and Time's MarshalJSON
// and compacts its output. ok is false for any other value, and for the
// rarer shapes left to goccy: an order with responses or refunds.
func AppendJSON(b []byte, v any) (_ []byte, ok bool) {
	switch x := v.(type) {
	case event.Order:
		if len(x.Responses) > 0 || len(x.Refunds) > 0 {
			return b, false
		}
		return appendOrderJSON(b, &x), true
	case event.CheckinResult:
		return appendCheckinResultJSON(b, &x), true
	case event.QueueStatus:
		return appendQueueStatusJSON(b, &x), true
	case event.ScanResults:
		return appendScanResultsJSON(b, &x), true
	case event.PassPage:
		return AppendPassPageJSON(b, &x), true
	case JSONAppender:
		return x.AppendJSON(b), true
	}
	return b, false
}

// JSONAppender is an answer that writes its own JSON, exactly what
// encoding/json would write for it (the change feed's pages: mostly
// records stored as JSON already, which goccy would compact again).
type JSONAppender interface {
	AppendJSON(b []byte) []byte
}

func appendOrderJSON(b []byte, o *event.Order) []byte {
	b = append(b, `{"id":`...)
	b = jsonenc.AppendString(b, o.ID)
	b = append(b, `,"eventId":`...)
	b = jsonenc.AppendString(b, o.EventID)
	b = append(b, `,"orderNumber":`...)
	b = jsonenc.AppendString(b, o.OrderNumber)
	b = append(b, `,"status":`...)
	b = jsonenc.AppendString(b, o.Status)
	b = append(b, `,"email":`...)
	b = jsonenc.AppendString(b, o.Email)
	b = append(b, `,"name":`...)
	b = appendOptString(b, o.Name)
	b = append(b, `,"items":`...)
	if o.Items == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range o.Items {
			it := &o.Items[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"itemType":`...)
			b = jsonenc.AppendString(b, it.ItemType)
			b = append(b, `,"itemId":`...)
			b = jsonenc.AppendString(b, it.ItemID)
			b = append(b, `,"name":`...)
			b = jsonenc.AppendString(b, it.Name)
			b = append(b, `,"quantity":`...)
			b = strconv.AppendInt(b, int64(it.Quantity), 10)
			b = append(b, `,"unitPriceAmount":`...)
			b = it.UnitPriceAmount.AppendJSON(b)
			b = append(b, `,"amount":`...)
			b = it.Amount.AppendJSON(b)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"totalAmount":`...)
	b = o.TotalAmount.AppendJSON(b)
	b = append(b, `,"currency":`...)
	b = jsonenc.AppendString(b, o.Currency)
	b = append(b, `,"alreadyRegistered":`...)
	b = strconv.AppendBool(b, o.AlreadyRegistered)
	b = append(b, `,"registrationId":`...)
	b = appendOptString(b, o.RegistrationID)
	b = append(b, `,"redemptionCode":`...)
	b = appendOptString(b, o.RedemptionCode)
	b = append(b, `,"promotionCode":`...)
	b = appendOptString(b, o.PromotionCode)
	b = append(b, `,"discountAmount":`...)
	b = o.DiscountAmount.AppendJSON(b)
	b = append(b, `,"responses":null,"holdExpiresAt":`...)
	if o.HoldExpiresAt == nil {
		b = append(b, "null"...)
	} else {
		b = o.HoldExpiresAt.AppendJSON(b)
	}
	b = append(b, `,"paymentId":`...)
	b = appendOptString(b, o.PaymentID)
	b = append(b, `,"orderUrl":`...)
	b = jsonenc.AppendString(b, o.OrderURL)
	b = append(b, `,"checkoutUrl":`...)
	b = appendOptString(b, o.CheckoutURL)
	b = append(b, `,"paymentUrl":`...)
	b = appendOptString(b, o.PaymentURL)
	b = append(b, `,"successUrl":`...)
	b = appendOptString(b, o.SuccessURL)
	b = append(b, `,"cancelUrl":`...)
	b = appendOptString(b, o.CancelURL)
	b = append(b, `,"createdAt":`...)
	b = o.CreatedAt.AppendJSON(b)
	b = append(b, `,"updatedAt":`...)
	b = o.UpdatedAt.AppendJSON(b)
	return append(b, '}')
}

func appendCheckinResultJSON(b []byte, r *event.CheckinResult) []byte {
	b = append(b, `{"checkin":`...)
	b = appendCheckinJSON(b, &r.Checkin, nil)
	b = append(b, `,"alreadyCheckedIn":`...)
	b = strconv.AppendBool(b, r.AlreadyCheckedIn)
	b = append(b, `,"access":`...)
	if a := r.Access; a == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"allowed":`...)
		b = strconv.AppendBool(b, a.Allowed)
		b = append(b, `,"requiredPerkIds":`...)
		b = appendStrings(b, a.RequiredPerkIDs)
		b = append(b, `,"missingPerkIds":`...)
		b = appendStrings(b, a.MissingPerkIDs)
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendScanResultsJSON writes a door batch's verdicts (500 scans in one
// answer: by hand, the batch's encoding costs a tenth of goccy's). The
// buffer is grown once to the answer's size (scanResultsLen), not ~20
// times by append on the way to ~200 KB; the verdicts and the check-ins'
// words are written as literals (appendVerdict, appendWord), and a
// batch's times, mostly one second, are formatted once (timeText).
func appendScanResultsJSON(b []byte, rs *event.ScanResults) []byte {
	if rs.Results == nil {
		return append(b, `{"results":null}`...)
	}
	b = slices.Grow(b, scanResultsLen(rs))
	var tt timeText
	b = append(b, `{"results":[`...)
	for i := range rs.Results {
		r := &rs.Results[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"scanId":`...)
		b = jsonenc.AppendString(b, r.ScanID)
		b = appendVerdict(b, r.Verdict)
		if r.Reason != nil {
			b = append(b, `,"reason":`...)
			b = jsonenc.AppendString(b, *r.Reason)
		}
		if r.RegistrationID != nil {
			b = append(b, `,"registrationId":`...)
			b = jsonenc.AppendString(b, *r.RegistrationID)
		}
		if r.Checkin != nil {
			b = append(b, `,"checkin":`...)
			b = appendCheckinJSON(b, r.Checkin, &tt)
		}
		if f := r.FirstCheckin; f != nil {
			b = append(b, `,"firstCheckin":{"id":`...)
			b = jsonenc.AppendString(b, f.ID)
			b = append(b, `,"subjectType":`...)
			b = appendWord(b, f.SubjectType)
			b = append(b, `,"subjectId":`...)
			b = appendOptString(b, f.SubjectID)
			b = append(b, `,"checkedInAt":`...)
			b = tt.append(b, f.CheckedInAt)
			b = append(b, `,"deviceId":`...)
			b = appendOptString(b, f.DeviceID)
			b = append(b, '}')
		}
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// timeJSONLen is the length of a Time's JSON for the years 0 to 9999.
const timeJSONLen = len(`"2026-08-22T10:00:00Z"`)

// scanResultsLen is the length of appendScanResultsJSON's answer for rs
// when no string in it needs escaping (nearly always: ids, emails, codes):
// the size to grow the buffer to at once. It reads the strings' lengths
// line for line as appendScanResultsJSON writes them (TestScanResultsLen
// keeps the two together); an escape only makes append grow once more.
func scanResultsLen(rs *event.ScanResults) int {
	n := len(`{"results":[]}`)
	for i := range rs.Results {
		r := &rs.Results[i]
		n += len(`,{"scanId":""`) + len(r.ScanID) + len(`,"verdict":""`) + len(r.Verdict) + len(`}`)
		if r.Reason != nil {
			n += len(`,"reason":""`) + len(*r.Reason)
		}
		if r.RegistrationID != nil {
			n += len(`,"registrationId":""`) + len(*r.RegistrationID)
		}
		if c := r.Checkin; c != nil {
			n += len(`,"checkin":{"id":"","registrationId":"","subjectType":"","subjectId":,"method":"",`+
				`"registrationEmail":"","registrationName":,"checkedInAt":,"deviceId":}`) +
				len(c.ID) + len(c.RegistrationID) + len(c.SubjectType) + optStringLen(c.SubjectID) + len(c.Method) +
				len(c.RegistrationEmail) + optStringLen(c.RegistrationName) + timeJSONLen + optStringLen(c.DeviceID)
		}
		if f := r.FirstCheckin; f != nil {
			n += len(`,"firstCheckin":{"id":"","subjectType":"","subjectId":,"checkedInAt":,"deviceId":}`) +
				len(f.ID) + len(f.SubjectType) + optStringLen(f.SubjectID) + timeJSONLen + optStringLen(f.DeviceID)
		}
	}
	if len(rs.Results) > 0 {
		n-- // no comma before the first
	}
	return n
}

// optStringLen is the length of appendOptString's JSON for s, unescaped.
func optStringLen(s *string) int {
	if s == nil {
		return len("null")
	}
	return len(`""`) + len(*s)
}

// appendVerdict writes a scan's verdict with its key. The three verdicts
// (event/door.go) hold only characters JSON writes as they are, so their
// JSON is the word between quotes: written as a literal, without scanning
// the string. Any other string is escaped as ever.
func appendVerdict(b []byte, v string) []byte {
	switch v {
	case event.VerdictAdmitted:
		return append(b, `,"verdict":"admitted"`...)
	case event.VerdictAlreadyCheckedIn:
		return append(b, `,"verdict":"already_checked_in"`...)
	case event.VerdictRefused:
		return append(b, `,"verdict":"refused"`...)
	}
	b = append(b, `,"verdict":`...)
	return jsonenc.AppendString(b, v)
}

// appendWord writes a check-in's subjectType or method: the words the
// contract allows for them (event|session|venue, scan|manual) are written
// as literals, as appendVerdict does; any other string is escaped.
func appendWord(b []byte, s string) []byte {
	switch s {
	case "event":
		return append(b, `"event"`...)
	case "session":
		return append(b, `"session"`...)
	case "venue":
		return append(b, `"venue"`...)
	case "scan":
		return append(b, `"scan"`...)
	case "manual":
		return append(b, `"manual"`...)
	}
	return jsonenc.AppendString(b, s)
}

// timeText keeps the JSON of the last time an answer wrote: a batch's
// check-ins are made at one instant (the batch's now, or the scans'
// offline time), so most of a door answer's times are the same second's
// text, copied rather than formatted again. The zero value is empty; a
// nil *timeText formats every time.
type timeText struct {
	sec  int64 // t.Unix() of text[:n]
	n    int   // 0: nothing kept
	text [timeJSONLen]byte
}

// append writes t as t.AppendJSON does. That writes t's instant in UTC
// (the zone and the monotonic reading play no part) truncated to the
// second (Truncate keeps t.Unix() and drops the nanoseconds), so times of
// the same Unix second write the same text. The text is kept only for
// times from 1970 on with a four-digit year, the check-ins there are
// (event.ParseTime refuses earlier ones): any other time is formatted.
func (tt *timeText) append(b []byte, t event.Time) []byte {
	if tt == nil {
		return t.AppendJSON(b)
	}
	sec := t.Unix()
	if tt.n > 0 && sec == tt.sec {
		return append(b, tt.text[:tt.n]...)
	}
	start := len(b)
	b = t.AppendJSON(b)
	if out := b[start:]; sec >= 0 && len(out) <= len(tt.text) {
		tt.sec, tt.n = sec, copy(tt.text[:], out)
	}
	return b
}

// appendCheckinJSON writes a check-in; tt, when not nil, keeps the last
// time written across a door answer's check-ins.
func appendCheckinJSON(b []byte, c *event.Checkin, tt *timeText) []byte {
	b = append(b, `{"id":`...)
	b = jsonenc.AppendString(b, c.ID)
	b = append(b, `,"registrationId":`...)
	b = jsonenc.AppendString(b, c.RegistrationID)
	b = append(b, `,"subjectType":`...)
	b = appendWord(b, c.SubjectType)
	b = append(b, `,"subjectId":`...)
	b = appendOptString(b, c.SubjectID)
	b = append(b, `,"method":`...)
	b = appendWord(b, c.Method)
	b = append(b, `,"registrationEmail":`...)
	b = jsonenc.AppendString(b, c.RegistrationEmail)
	b = append(b, `,"registrationName":`...)
	b = appendOptString(b, c.RegistrationName)
	b = append(b, `,"checkedInAt":`...)
	b = tt.append(b, c.CheckedInAt)
	b = append(b, `,"deviceId":`...)
	b = appendOptString(b, c.DeviceID)
	return append(b, '}')
}

// appendStrings writes a string slice: null when nil, as goccy does.
func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.AppendString(b, s)
	}
	return append(b, ']')
}

func appendOptString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return jsonenc.AppendString(b, *s)
}

func appendQueueStatusJSON(b []byte, q *event.QueueStatus) []byte {
	b = append(b, `{"queueId":`...)
	b = jsonenc.AppendString(b, q.QueueID)
	b = append(b, `,"state":`...)
	b = jsonenc.AppendString(b, q.State)
	b = append(b, `,"position":`...)
	b = appendOptInt(b, q.Position)
	b = append(b, `,"estimatedWaitSeconds":`...)
	b = appendOptInt(b, q.EstimatedWaitSeconds)
	b = append(b, `,"retryAfterSeconds":`...)
	b = strconv.AppendInt(b, int64(q.RetryAfterSeconds), 10)
	if q.QueueToken != "" {
		b = append(b, `,"queueToken":`...)
		b = jsonenc.AppendString(b, q.QueueToken)
	}
	if q.AdmittedUntil != nil {
		b = append(b, `,"admittedUntil":`...)
		b = q.AdmittedUntil.AppendJSON(b)
	}
	b = append(b, `,"onSaleAt":`...)
	b = q.OnSaleAt.AppendJSON(b)
	return append(b, '}')
}

func appendOptInt(b []byte, n *int) []byte {
	if n == nil {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, int64(*n), 10)
}

// AppendPassPageJSON writes a page of a door's passes (GET
// /door/v1/passes) as goccy writes it. Fifty devices downloading 100,000
// passes at the doors' opening made goccy allocate its output for every
// page (~280 bytes a pass, ~1.4 GB in door-sync's downloads); written by
// hand into the caller's buffer, a page allocates nothing here.
func AppendPassPageJSON(b []byte, p *event.PassPage) []byte {
	if p.Data == nil {
		b = append(b, `{"data":null`...)
	} else {
		b = append(b, `{"data":[`...)
		var tt timeText
		for i := range p.Data {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendDoorPassJSON(b, &p.Data[i], &tt)
		}
		b = append(b, ']')
	}
	if p.HasMore {
		b = append(b, `,"hasMore":true,"nextCursor":`...)
	} else {
		b = append(b, `,"hasMore":false,"nextCursor":`...)
	}
	b = jsonenc.AppendString(b, p.NextCursor)
	return append(b, '}')
}

func appendDoorPassJSON(b []byte, d *event.DoorPass, tt *timeText) []byte {
	b = append(b, `{"registrationId":`...)
	b = jsonenc.AppendString(b, d.RegistrationID)
	b = append(b, `,"checkinCode":`...)
	b = jsonenc.AppendString(b, d.CheckinCode)
	b = append(b, `,"name":`...)
	b = appendOptString(b, d.Name)
	b = append(b, `,"email":`...)
	b = jsonenc.AppendString(b, d.Email)
	b = append(b, `,"registrationTypeId":`...)
	b = appendOptString(b, d.RegistrationTypeID)
	b = append(b, `,"status":`...)
	b = jsonenc.AppendString(b, d.Status)
	b = append(b, `,"perkIds":`...)
	b = appendStrings(b, d.PerkIDs)
	b = append(b, `,"checkins":`...)
	if d.Checkins == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range d.Checkins {
			c := &d.Checkins[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"subjectType":`...)
			b = appendWord(b, c.SubjectType)
			b = append(b, `,"subjectId":`...)
			b = appendOptString(b, c.SubjectID)
			b = append(b, `,"checkedInAt":`...)
			b = tt.append(b, c.CheckedInAt)
			b = append(b, `,"deviceId":`...)
			b = appendOptString(b, c.DeviceID)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"updatedAt":`...)
	b = tt.append(b, d.UpdatedAt)
	return append(b, '}')
}
