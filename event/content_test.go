package event

import (
	"encoding/binary"
	"testing"
	"time"

	json "github.com/goccy/go-json"
	"github.com/stretchr/testify/require"
)

// simPromos are the promotion codes the simulation tries: two with few
// uses, one scoped to add-ons, and one unknown.
var simPromos = []string{"HALF", "TENOFF", "SHIRT", "nope"}

func (s *sim) setupContent() {
	pct, off, one, two := 50, Money(700), 1, 2
	s.must(CreatePromotionCode{Code: "HALF", PercentOff: &pct, MaxUses: &two})
	s.must(CreatePromotionCode{Code: "TENOFF", AmountOff: &off, MaxUses: &one})
	s.must(CreatePromotionCode{Code: "shirt", AmountOff: &off, AppliesTo: &PromotionScope{AddonIDs: []string{"ao_1"}}})
	s.must(PutForm{TypeID: "tt_1", Questions: []Question{{ID: "size", Type: QSelect, Label: "Size", Options: []string{"S", "M"}}}})
	s.must(PublishForm{TypeID: "tt_1"})
}

// checkContent: promotion uses (paid plus held by live orders) never above
// maxUses and equal to what the orders say; no order amount is negative.
func (s *sim) checkContent() {
	st := s.m.State()
	held, used := map[string]int{}, map[string]int{}
	for _, id := range st.OrderOrder {
		o := st.Orders[id]
		require.GreaterOrEqual(s.t, int64(o.Total), int64(0), "order %s total", id)
		var sum Money
		for _, l := range o.Lines {
			require.GreaterOrEqual(s.t, int64(l.Amount), int64(0), "order %s line amount", id)
			sum += l.Amount
		}
		require.Equal(s.t, sum, o.Total, "order %s total is the sum of its lines", id)
		if o.PromoID == "" {
			continue
		}
		switch {
		case o.holding():
			held[o.PromoID]++
		case o.Status == OrderStatusPaid:
			used[o.PromoID]++
		}
	}
	for id, p := range st.Content.Promos {
		require.Equal(s.t, held[id], p.Held, "held of %s", p.Code)
		require.Equal(s.t, used[id], p.Uses, "uses of %s", p.Code)
		if p.MaxUses != nil {
			require.LessOrEqual(s.t, p.Uses+p.Held, *p.MaxUses, "uses of %s above maxUses", p.Code)
		}
	}
}

func TestLineDiscountRounding(t *testing.T) {
	pct := func(n int) *PromoRec { return &PromoRec{PercentOff: n} }
	off := func(m Money) *PromoRec { return &PromoRec{AmountOff: m} }
	line := func(unit Money, q int) OrderLine {
		return OrderLine{ItemType: ItemAddon, ItemID: "ao_1", UnitPrice: unit, Quantity: q, Amount: unit * Money(q)}
	}
	for _, c := range []struct {
		p    *PromoRec
		l    OrderLine
		want Money
	}{
		{pct(50), line(1, 1), 1},     // 0.5 rounds half up
		{pct(50), line(3, 1), 2},     // 1.5 -> 2
		{pct(33), line(100, 1), 33},  // exact
		{pct(15), line(999, 1), 150}, // 149.85 -> 150
		{pct(15), line(333, 3), 150}, // per line, not per unit: 149.85 -> 150
		{pct(100), line(1234, 2), 2468},
		{off(700), line(1000, 2), 1400},
		{off(700), line(500, 3), 1500}, // never below zero
		{off(700), line(0, 1), 0},
	} {
		got := lineDiscount(c.p, c.l)
		require.Equal(t, c.want, got, "%+v on %+v", *c.p, c.l)
		require.GreaterOrEqual(t, int64(c.l.Amount-got), int64(0))
	}
	scoped := &PromoRec{PercentOff: 10, Scope: PromotionScope{TicketTypeIDs: []string{"tt_1"}}}
	require.Equal(t, Money(0), lineDiscount(scoped, line(1000, 1)), "an add-on outside a ticket-type scope")
}

func TestCanonLang(t *testing.T) {
	for in, want := range map[string]string{
		"de": "de", "zh-cn": "zh-CN", "ZH_cn": "zh-CN", "sr-latn-rs": "sr-Latn-RS", "es-419": "es-419",
		"": "", "x": "", "e1": "", "de--AT": "", "de-AT!": "", "verylongsubtag-de": "",
	} {
		require.Equal(t, want, canonLang(in), in)
	}
}

func TestCheckAnswers(t *testing.T) {
	s := &sim{t: t, m: NewMachine("evt_f", Config{BaseURL: "http://t"}, newSeqIDs(1)), now: time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC), errs: map[string]int{}}
	s.must(CreateEvent{Name: "F", Timezone: "UTC"})
	s.must(CreateTicketType{Name: "GA"})
	s.must(PutForm{TypeID: "tt_1", Questions: []Question{
		{ID: "name", Type: QText, Label: "Badge name", Required: true},
		{ID: "mail", Type: QEmail, Label: "Work email"},
		{ID: "tel", Type: QPhone, Label: "Phone"},
		{ID: "tshirt", Type: QSelect, Label: "T-shirt", Options: []string{"S", "M", "L"}, Required: true},
		{ID: "diet", Type: QMultiSelect, Label: "Diet", Options: []string{"veg", "halal"}},
		{ID: "terms", Type: QCheckbox, Label: "Terms", Required: true},
		{ID: "dob", Type: QDate, Label: "Birthday"},
	}})
	// A draft checks nothing yet.
	require.NoError(t, s.m.checkAnswers("tt_1", []byte(`{"x":1}`), true))
	s.must(PublishForm{TypeID: "tt_1"})
	ok := `{"name":"Ann","mail":"a@x.io","tel":"+49 (30) 1234-567","tshirt":"M","diet":["veg"],"terms":true,"dob":"1990-02-28"}`
	require.NoError(t, s.m.checkAnswers("tt_1", []byte(ok), true))
	for body, field := range map[string]string{
		`{"name":"Ann","tshirt":"M","terms":true,"shoe":1}`:             "responses.shoe",
		`{"tshirt":"M","terms":true}`:                                   "responses.name",
		`{"name":"Ann","tshirt":"XL","terms":true}`:                     "responses.tshirt",
		`{"name":"Ann","tshirt":"M","terms":false}`:                     "responses.terms",
		`{"name":"Ann","tshirt":"M","terms":true,"mail":"nope"}`:        "responses.mail",
		`{"name":"Ann","tshirt":"M","terms":true,"tel":"call me"}`:      "responses.tel",
		`{"name":"Ann","tshirt":"M","terms":true,"dob":"28.02.1990"}`:   "responses.dob",
		`{"name":"Ann","tshirt":"M","terms":true,"diet":["veg","veg"]}`: "responses.diet",
		`{"name":"Ann","tshirt":"M","terms":true,"diet":"veg"}`:         "responses.diet",
		`{"name":42,"tshirt":"M","terms":true}`:                         "responses.name",
		`{"name":"Ann","tshirt":"M","terms":"yes"}`:                     "responses.terms",
	} {
		err := s.m.checkAnswers("tt_1", []byte(body), true)
		require.Error(t, err, body)
		e := err.(*Error)
		require.Equal(t, InvalidArgument, e.Code)
		require.Equal(t, field, e.Details[0].Field, body)
	}
	// A partial answer (a checkout session) skips the required check only.
	require.NoError(t, s.m.checkAnswers("tt_1", []byte(`{"tshirt":"S"}`), false))
	require.Error(t, s.m.checkAnswers("tt_1", []byte(`{"tshirt":"XS"}`), false))
}

// TestContentSnapshotCompat: a snapshot from before the organizer-content section
// decodes with empty content, and full content round-trips.
func TestContentSnapshotCompat(t *testing.T) {
	s := &sim{t: t, m: NewMachine("evt_c", Config{BaseURL: "http://t"}, newSeqIDs(1)), now: time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC), errs: map[string]int{}}
	s.must(CreateEvent{Name: "C", Timezone: "UTC"})
	old, err := MarshalState(s.m.State())
	require.NoError(t, err)
	require.Equal(t, byte(0), old[len(old)-1], "empty content is one zero byte")
	st, err := UnmarshalState(old[:len(old)-1])
	require.NoError(t, err)
	require.Empty(t, st.Content.Promos)

	s.must(CreateTicketType{Name: "GA"})
	pct := 10
	s.must(CreatePromotionCode{Code: "TEN", PercentOff: &pct})
	s.must(PutTranslation{Lang: "de", TranslationText: TranslationText{Name: "Konferenz", TicketTypes: map[string]TranslatedText{"tt_1": {Name: "Eintritt"}}}})
	s.must(SetSite{Description: Some("About")})
	s.must(PutForm{TypeID: "tt_1", Questions: []Question{{ID: "q", Type: QText, Label: "Q"}}})
	full, err := MarshalState(s.m.State())
	require.NoError(t, err)
	st, err = UnmarshalState(full)
	require.NoError(t, err)
	again, err := MarshalState(st)
	require.NoError(t, err)
	require.Equal(t, full, again)
	require.Equal(t, "TEN", st.Content.Promos["prm_1"].Code)
	require.Equal(t, "prm_1", st.Content.byCode()["TEN"])
	// A corrupt content section is an error, never a panic.
	bad := append([]byte{}, full...)
	// The content section's last bytes come before the later sections.
	var after enc
	after = st.appendDoor(after)
	after = binary.AppendUvarint(after, st.FeedSeq)
	after = st.appendRoom(after)
	bad[len(bad)-len(after)-2] = '!'
	_, err = UnmarshalState(bad)
	require.Error(t, err)
	b, _ := json.Marshal(st.Content.Translations["de"].Text)
	require.Contains(t, string(b), "Eintritt")
}
