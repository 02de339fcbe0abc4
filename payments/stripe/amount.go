package stripe

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Errors of the amount rules. A webhook whose amount or currency does not
// match its order must never settle it: the caller treats both as "do not
// settle" and keeps the payment for a person to look at (or refunds it).
var (
	ErrAmountMismatch   = errors.New("stripe: amount does not match the order")
	ErrCurrencyMismatch = errors.New("stripe: currency does not match the order")
	// ErrAmount is an amount that cannot be charged in its currency: not a
	// decimal like 49.99, or finer than the currency's smallest unit at
	// Stripe (1000.50 JPY).
	ErrAmount = errors.New("stripe: amount cannot be charged in its currency")
)

// zeroDecimal are the currencies Stripe counts in whole units: 500 JPY is
// amount 500, not 50000.
var zeroDecimal = map[string]bool{
	"BIF": true, "CLP": true, "DJF": true, "GNF": true, "JPY": true, "KMF": true, "KRW": true, "MGA": true,
	"PYG": true, "RWF": true, "UGX": true, "VND": true, "VUV": true, "XAF": true, "XOF": true, "XPF": true,
}

// threeDecimal are the currencies Stripe counts in thousandths; Stripe
// wants their last digit 0, which an amount of the service (at most 2
// decimals) always has.
var threeDecimal = map[string]bool{"BHD": true, "JOD": true, "KWD": true, "OMR": true, "TND": true}

// wholeOnly are two-decimal currencies at Stripe whose fraction must be 00:
// ISK became zero-decimal, but Stripe keeps it two-decimal in the API for
// backwards compatibility.
var wholeOnly = map[string]bool{"ISK": true}

// maxMinor bounds an amount far below int64 overflow (10^13 major units
// in a three-decimal currency), as the service bounds its own amounts.
const maxMinor = 10_000_000_000_000_000

// Exponent is how many decimals Stripe's integer amounts of currency carry:
// 0 (JPY), 2 (USD, EUR and most) or 3 (KWD). currency is ISO 4217, any case.
func Exponent(currency string) int {
	c := strings.ToUpper(currency)
	switch {
	case zeroDecimal[c]:
		return 0
	case threeDecimal[c]:
		return 3
	}
	return 2
}

// ToMinor converts a decimal amount in major units ("49.99", the API's
// form) to Stripe's integer amount of currency: 4999 for USD, 500 for "500"
// JPY, 12340 for "12.34" KWD. An amount finer than the currency allows
// ("500.5" JPY, "5.5" ISK) is ErrAmount: it is refused rather than rounded,
// so what the buyer pays is exactly the order's total.
func ToMinor(amount, currency string) (int64, error) {
	whole, frac, hasDot := strings.Cut(amount, ".")
	if whole == "" || !digits(whole) || (hasDot && (frac == "" || !digits(frac))) || len(whole) > 14 {
		return 0, fmt.Errorf("%w: %q is not a decimal amount like 49.99", ErrAmount, amount)
	}
	exp := Exponent(currency)
	frac = strings.TrimRight(frac, "0")
	if len(frac) > exp || (wholeOnly[strings.ToUpper(currency)] && frac != "") {
		return 0, fmt.Errorf("%w: %s %s is finer than its smallest unit", ErrAmount, amount, strings.ToUpper(currency))
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q", ErrAmount, amount)
	}
	var f int64
	if frac != "" {
		f, _ = strconv.ParseInt(frac, 10, 64)
	}
	for i := len(frac); i < exp; i++ {
		f *= 10
	}
	m := w
	for range exp {
		m *= 10
	}
	m += f
	if m > maxMinor {
		return 0, fmt.Errorf("%w: %s is too large", ErrAmount, amount)
	}
	return m, nil
}

// FromMinor formats Stripe's integer amount of currency as the API's
// decimal in major units, without trailing zeros: 4999 USD -> "49.99", 5000
// USD -> "50", 4990 USD -> "49.9", 500 JPY -> "500". A three-decimal
// amount with a non-zero last digit keeps it ("12.345"): the service's
// amounts have at most 2 decimals, so such an amount never matches one.
func FromMinor(minor int64, currency string) string {
	neg := minor < 0
	u := uint64(minor)
	if neg {
		u = -u
	}
	exp := Exponent(currency)
	div := uint64(1)
	for range exp {
		div *= 10
	}
	b := strconv.AppendUint(nil, u/div, 10)
	if rest := u % div; rest != 0 {
		fs := strconv.FormatUint(rest+div, 10)[1:] // zero-padded to exp digits
		b = append(append(b, '.'), strings.TrimRight(fs, "0")...)
	}
	if neg {
		return "-" + string(b)
	}
	return string(b)
}

// CheckAmount compares what Stripe reports (gotMinor in gotCurrency, as in
// a webhook) with what the order expects (a decimal in major units and an
// ISO currency, as the service keeps them). It answers nil only when both
// match exactly; ErrCurrencyMismatch or ErrAmountMismatch otherwise (an
// expected amount that cannot be charged at all is an ErrAmountMismatch
// too: nothing Stripe reports can match it).
func CheckAmount(wantAmount, wantCurrency string, gotMinor int64, gotCurrency string) error {
	if !strings.EqualFold(strings.TrimSpace(wantCurrency), strings.TrimSpace(gotCurrency)) || gotCurrency == "" {
		return fmt.Errorf("%w: paid in %q, the order is in %q", ErrCurrencyMismatch, strings.ToUpper(gotCurrency), strings.ToUpper(wantCurrency))
	}
	want, err := ToMinor(wantAmount, wantCurrency)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrAmountMismatch, err)
	}
	if want != gotMinor {
		return fmt.Errorf("%w: paid %s %s, the order's total is %s %s", ErrAmountMismatch,
			FromMinor(gotMinor, gotCurrency), strings.ToUpper(gotCurrency), wantAmount, strings.ToUpper(wantCurrency))
	}
	return nil
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
