package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// SignatureHeader is the header that carries the signatures.
const SignatureHeader = "Webhook-Signature"

// ErrBadSignature is returned by Verify for a missing, malformed, stale or
// unmatched signature.
var ErrBadSignature = errors.New("webhooks: bad signature")

// Sign returns the hex HMAC-SHA256 of "<t>.<body>" keyed by secret.
func Sign(secret string, t int64, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(strconv.AppendInt(nil, t, 10))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// Signature builds the header value "t=<t>,v1=<sig>[,v1=<sig>...]", one v1
// per secret in the given order.
func Signature(t int64, body []byte, secrets ...string) string {
	var b strings.Builder
	b.WriteString("t=")
	b.WriteString(strconv.FormatInt(t, 10))
	for _, s := range secrets {
		b.WriteString(",v1=")
		b.WriteString(Sign(s, t, body))
	}
	return b.String()
}

// Verify checks a Webhook-Signature header against body and secret: some
// v1 must match and t must be within tolerance of now (0 skips the time
// check).
func Verify(header string, body []byte, secret string, now time.Time, tolerance time.Duration) error {
	var t int64 = -1
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return ErrBadSignature
		}
		switch k {
		case "t":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return ErrBadSignature
			}
			t = n
		case "v1":
			sigs = append(sigs, v)
		}
	}
	if t < 0 || len(sigs) == 0 {
		return ErrBadSignature
	}
	if tolerance > 0 {
		d := now.Sub(time.Unix(t, 0))
		if d > tolerance || d < -tolerance {
			return ErrBadSignature
		}
	}
	want := Sign(secret, t, body)
	for _, s := range sigs {
		if hmac.Equal([]byte(s), []byte(want)) {
			return nil
		}
	}
	return ErrBadSignature
}
