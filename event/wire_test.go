package event

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fill sets every field of v (a pointer) to a value of its own, nested
// structs, pointers and slices included, so that a wire form missing a
// field decodes to something unequal.
func fill(t *testing.T, v reflect.Value, n *int) {
	*n++
	switch {
	case v.Type() == reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(time.Unix(1_700_000_000+int64(*n), int64(*n)).UTC()))
		return
	case v.Type() == reflect.TypeFor[json.RawMessage]():
		v.Set(reflect.ValueOf(json.RawMessage(fmt.Sprintf(`{"n":%d}`, *n))))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", *n))
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(*n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(t, p.Elem(), n)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(t, s.Index(i), n)
		}
		v.Set(s)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(t, v.Field(i), n)
			}
		}
	default:
		t.Fatalf("fill: no value for a %s (%s): teach fill and the wire form", v.Type(), v.Kind())
	}
}

// TestWireCoversEveryField: every field of a type with a wire form, set,
// comes back equal; a field added to the type and not to its form (wire.go)
// fails here.
func TestWireCoversEveryField(t *testing.T) {
	for _, v := range []any{PlaceOrder{}, GetOrder{}, RecordCheckin{}, Order{}, CheckinResult{}, Error{}} {
		p := reflect.New(reflect.TypeOf(v))
		n := 0
		fill(t, p.Elem(), &n)
		want := p.Elem().Interface()
		name, b, ok := AppendWire(nil, want)
		require.True(t, ok, "%T", want)
		require.Equal(t, reflect.TypeOf(v).Name(), name)
		got, err := ReadWire(name, b)
		require.NoError(t, err)
		require.Equal(t, want, got, "%T: a field is missing from its wire form (event/wire.go)", want)

		// Zero values (nil pointers and slices) come back as they went.
		_, b, _ = AppendWire(nil, v)
		got, err = ReadWire(name, b)
		require.NoError(t, err)
		require.Equal(t, v, got)

		// Cut anywhere, a form decodes or fails; it never panics.
		_, full, _ := AppendWire(nil, want)
		for i := range full {
			_, _ = ReadWire(name, full[:i])
		}
	}
	_, _, ok := AppendWire(nil, ListOrders{})
	require.False(t, ok, "a type without a wire form")
	_, err := ReadWire("ListOrders", nil)
	require.Error(t, err)
}

// TestWireKeepsNullAndEmptyApart: responses absent (null in JSON) and
// present but empty stay apart.
func TestWireKeepsNullAndEmptyApart(t *testing.T) {
	for _, r := range []json.RawMessage{nil, {}, json.RawMessage(`[]`)} {
		_, b, _ := AppendWire(nil, Order{Responses: r})
		got, err := ReadWire("Order", b)
		require.NoError(t, err)
		require.Equal(t, r == nil, got.(Order).Responses == nil)
		require.Equal(t, string(r), string(got.(Order).Responses))
	}
}
