package stripe

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAmountsInMinorUnits(t *testing.T) {
	for _, tc := range []struct {
		amount, cur string
		minor       int64
		back        string
	}{
		{"49.99", "USD", 4999, "49.99"},
		{"50", "usd", 5000, "50"},
		{"50.00", "USD", 5000, "50"},
		{"49.9", "EUR", 4990, "49.9"},
		{"0.05", "GBP", 5, "0.05"},
		{"0", "USD", 0, "0"},
		{"5000", "JPY", 5000, "5000"},
		{"5000.00", "JPY", 5000, "5000"},
		{"1", "KRW", 1, "1"},
		{"12.34", "KWD", 12340, "12.34"},
		{"12.3", "BHD", 12300, "12.3"},
		{"500", "ISK", 50000, "500"},
		{"99999999999999.99", "USD", 9999999999999999, "99999999999999.99"},
	} {
		got, err := ToMinor(tc.amount, tc.cur)
		if assert.NoError(t, err, tc.amount+" "+tc.cur) {
			assert.Equal(t, tc.minor, got, tc.amount+" "+tc.cur)
		}
		assert.Equal(t, tc.back, FromMinor(tc.minor, tc.cur), tc.amount+" "+tc.cur)
	}
	assert.Equal(t, "12.345", FromMinor(12345, "KWD"))
	assert.Equal(t, "-1.5", FromMinor(-150, "USD"))
	for _, bad := range [][2]string{
		{"500.5", "JPY"}, {"5.5", "ISK"}, {"1.001", "USD"}, {"-1", "USD"}, {"1e3", "USD"}, {"", "USD"},
		{".5", "USD"}, {"5.", "USD"}, {"abc", "USD"}, {"1,5", "EUR"}, {"123456789012345", "USD"}, {"+1", "USD"},
	} {
		_, err := ToMinor(bad[0], bad[1])
		assert.ErrorIs(t, err, ErrAmount, bad[0]+" "+bad[1])
	}
	assert.Equal(t, 0, Exponent("jpy"))
	assert.Equal(t, 3, Exponent("KWD"))
	assert.Equal(t, 2, Exponent("USD"))

	assert.NoError(t, CheckAmount("49.99", "USD", 4999, "usd"))
	assert.ErrorIs(t, CheckAmount("49.99", "USD", 4999, "eur"), ErrCurrencyMismatch)
	assert.ErrorIs(t, CheckAmount("49.99", "USD", 4999, ""), ErrCurrencyMismatch)
	assert.ErrorIs(t, CheckAmount("49.99", "USD", 5000, "usd"), ErrAmountMismatch)
	assert.ErrorIs(t, CheckAmount("oops", "USD", 5000, "usd"), ErrAmountMismatch)
}

func FuzzToMinor(f *testing.F) {
	f.Add("49.99", "USD")
	f.Add("500", "JPY")
	f.Add("12.34", "KWD")
	f.Fuzz(func(t *testing.T, amount, cur string) {
		m, err := ToMinor(amount, cur)
		if err != nil {
			return
		}
		if m < 0 || m > maxMinor {
			t.Fatalf("%q %q -> %d", amount, cur, m)
		}
		back, err := ToMinor(FromMinor(m, cur), cur)
		if err != nil || back != m {
			t.Fatalf("%q %q -> %d -> %q -> %d, %v", amount, cur, m, FromMinor(m, cur), back, err)
		}
	})
}
