package event

import (
	"encoding/json"
	"reflect"
	"sort"
	"testing"
	"time"
)

// FuzzUnmarshalChange: bad log bytes give an error, never a panic, and a
// decoded change encodes again.
func FuzzUnmarshalChange(f *testing.F) {
	now := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	for _, ch := range []Change{
		EventCreated{At: now, Name: "x", Timezone: "UTC", Currency: "USD"},
		OrderPlaced{At: now, ID: "ord_1", Holds: []Hold{{Kind: ItemAddon, ID: "ao_1", Qty: 2}}},
		CodesMinted{At: now, TypeID: "tt_1", Codes: []MintedCode{{ID: "rc_1", Code: "A"}}},
		RegistrationStatusChanged{At: now, ID: "reg_1", Status: RegCancelled},
		FormSaved{At: now, TypeID: "tt_1", Questions: []Question{{ID: "q", Type: QSelect, Label: "Q", Options: []string{"a"}}}},
		PromoSaved{At: now, ID: "prm_1", Code: "HALF", PercentOff: 50},
		TranslationSaved{At: now, Lang: "de", Text: TranslationText{Name: "Konferenz"}},
	} {
		b, err := MarshalChange(ch)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{1, 200})
	f.Add([]byte{2})
	for _, ch := range []Change{
		RegistrationCreated{At: now, ID: "reg_1", Email: "a@x.io", Status: RegConfirmed, CheckinCode: "CHK-1", PassToken: "evt_1.P"},
		TicketIssued{At: now, RegistrationIDs: []string{"reg_1", "reg_2"}},
		WaitlistSeated{At: now, RegistrationIDs: []string{"reg_3"}},
		LocationSet{At: now, Venue: "Hall", Address: "1 Main St"},
		CheckedIn{At: now, ID: "chk_1", RegID: "reg_1", SubjectType: "event", Method: "scan"},
	} {
		b, err := MarshalChange(ch)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ch, err := UnmarshalChange(b)
		if err != nil {
			// ApplyRecord refuses the same bytes with the same error,
			// before applying anything.
			m := NewMachine("evt_1", Config{}, nil)
			if err2 := m.ApplyRecord(b); err2 == nil || err2.Error() != err.Error() {
				t.Fatalf("ApplyRecord error %v, UnmarshalChange error %v", err2, err)
			}
			return
		}
		if _, err := MarshalChange(ch); err != nil {
			t.Fatalf("re-encode %T: %v", ch, err)
		}
	})
}

// FuzzUnmarshalState: bad snapshot bytes give an error, never a panic, and a
// decoded state can be read through every list without panicking.
func FuzzUnmarshalState(f *testing.F) {
	r := newScriptRunner(&testing.T{})
	for _, l := range []string{
		`CreateEvent {"name":"C","timezone":"UTC","startsAt":"2026-09-01T09:00:00Z"}`,
		`UpdateEvent {"status":"published"}`,
		`CreateTicketType {"name":"GA","capacity":2}`,
		`UpdateTicketType ID=tt_1 {"status":"open"}`,
		`CreateRegistration {"email":"a@x.io","registrationTypeId":"tt_1"}`,
		`PlaceOrder {"email":"b@x.io","items":[{"itemType":"registration_type","itemId":"tt_1","quantity":1}]}`,
		`CreatePromotionCode {"code":"HALF","percentOff":50,"maxUses":3}`,
		`PlaceOrder {"email":"c@x.io","items":[{"itemType":"registration_type","itemId":"tt_1","quantity":1}],"promotionCode":"HALF"}`,
		`PutTranslation Lang=de {"name":"K"}`,
	} {
		r.run(l)
	}
	b, err := MarshalState(r.m.State())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte{1, '{', '}'})
	f.Add([]byte{1, 'n', 'u', 'l', 'l'})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := UnmarshalState(b)
		if err != nil {
			return
		}
		m := NewMachine(s.ID, testConfig(), newSeqIDs(1))
		m.Restore(s)
		now := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
		for _, c := range []Command{GetEvent{}, ListTicketTypes{Limit: 100}, ListRegistrations{Limit: 100}, ListCheckins{Limit: 100}, ListCodes{Limit: 100}, ListAddons{Limit: 100}, ListBundles{Limit: 100}, ListOrders{Limit: 100}} {
			_, _, _ = m.Decide(now, c)
		}
		m.NextDeadline()
	})
}

// FuzzDecide: arbitrary JSON bodies decoded into every command (as the HTTP
// binder would) never make Decide panic, on an empty and on a busy event.
func FuzzDecide(f *testing.F) {
	types := commandTypes()
	names := make([]string, 0, len(types))
	for n := range types {
		names = append(names, n)
	}
	sort.Strings(names)
	f.Add(uint8(0), []byte(`{"name":"x","timezone":"UTC"}`), "")
	f.Add(uint8(5), []byte(`{"email":"a@b","items":[{"itemType":"bundle","itemId":"bdl_1","quantity":1}]}`), "ord_1")
	f.Add(uint8(9), []byte(`{"capacity":null,"status":"open"}`), "tt_1")
	f.Add(uint8(3), []byte(`{"registrationId":"reg_1","subjectType":"venue","subjectId":"v"}`), "")
	f.Fuzz(func(t *testing.T, which uint8, body []byte, id string) {
		typ := types[names[int(which)%len(names)]]
		v := reflect.New(typ)
		if json.Unmarshal(body, v.Interface()) != nil {
			return
		}
		for _, field := range []string{"ID", "Ref", "Token", "Code", "PaymentID", "Cursor"} {
			if fv := v.Elem().FieldByName(field); fv.IsValid() && fv.Kind() == reflect.String && fv.String() == "" {
				fv.SetString(id)
			}
		}
		cmd := v.Elem().Interface().(Command)
		r := newScriptRunner(&testing.T{})
		now := r.now
		if _, _, err := r.m.Decide(now, cmd); err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("non-business error %v", err)
			}
		}
		busy(r)
		res, changes, err := r.m.Decide(now, cmd)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("non-business error %v", err)
			}
			return
		}
		if _, err := json.Marshal(res); err != nil {
			t.Fatalf("result of %T does not encode: %v", cmd, err)
		}
		for _, ch := range changes {
			r.m.Apply(ch)
		}
	})
}

// busy puts a runner's machine into a state with one of everything.
func busy(r *scriptRunner) {
	for _, l := range []string{
		`CreateEvent {"name":"C","timezone":"UTC","startsAt":"2026-09-01T09:00:00Z"}`,
		`UpdateEvent {"status":"published"}`,
		`CreateTicketType {"name":"GA","capacity":2,"allowWaitlist":true}`,
		`UpdateTicketType ID=tt_1 {"status":"open"}`,
		`CreateAddon {"name":"Shirt","capacity":2,"priceAmount":5}`,
		`UpdateAddon ID=ao_1 {"status":"open"}`,
		`CreateBundle {"name":"B","items":[{"itemType":"addon","itemId":"ao_1","quantity":1}]}`,
		`UpdateBundle ID=bdl_1 {"status":"open"}`,
		`MintCodes {"registrationTypeId":"tt_1","code":"C1"}`,
		`CreateRegistration {"email":"a@x.io","registrationTypeId":"tt_1"}`,
		`RecordCheckin {"registrationId":"reg_1","subjectType":"event"}`,
		`PlaceOrder {"email":"b@x.io","items":[{"itemType":"registration_type","itemId":"tt_1","quantity":1},{"itemType":"addon","itemId":"ao_1","quantity":1}]}`,
		`ConfirmOrder Ref=ord_1 {"successUrl":"https://a.io","cancelUrl":"https://a.io"}`,
		`CreateCheckoutSession {"items":[{"itemType":"addon","itemId":"ao_1","quantity":1}]}`,
	} {
		r.run(l)
	}
}
