package logredact

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	sk    = "sk_0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	pk    = "pk_ZYXWVTSRQPNMKJHGFEDCBA9876543210"
	adm   = "adm_8f14e45fceea167a5a36dedd4bea2543"
	odd   = "operator-chosen-admin-token-77"
	sid   = "c2Vzc2lvbi1pZC1zZWNyZXQtMTIzNDU2"
	whsec = "whsec_5f4dcc3b5aa765d61d8327deb882cf99"
)

func TestHandlerRedactsEveryPath(t *testing.T) {
	var buf bytes.Buffer
	for _, format := range []string{"text", "json"} {
		buf.Reset()
		var next slog.Handler = slog.NewTextHandler(&buf, nil)
		if format == "json" {
			next = slog.NewJSONHandler(&buf, nil)
		}
		log := slog.New(New(next, odd, "short"))
		// fasthttp's refused request, %q-quoted, a control byte in a header.
		raw := fmt.Sprintf("%q", "GET /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+sk+"\r\nX-Probe: a\x01b\r\nCookie: ticketd_console="+sid+"\r\n\r\n")
		log.Warn("http: fasthttp: error when serving connection: contents: " + raw)
		log.Warn("raw with a real newline\r\nauthorization:Bearer " + odd + "\r\nx: y")
		log.Info("keys", "pk", pk, "list", []string{sk, pk}, "err", errors.New("bad token "+adm), "n", 3)
		log.With("cfg", "whsec="+whsec).Info("with attrs", slog.Group("g", "h", "Basic "+sid))
		log.Info("named", "Authorization", "anything at all", "smtp_password", "hunter2hunter2")
		log.Info("a pass page", "path", "/pass/evt_01abc."+sid)
		log.Info("control byte inside the token", "raw", fmt.Sprintf("%q", "Authorization: Bearer sk_abc\x01"+sid+"\r\n"))
		out := buf.String()
		for _, secret := range []string{sk, pk, adm, odd, sid, whsec, "hunter2hunter2", "anything at all", sk[3:], pk[3:], adm[4:]} {
			require.NotContains(t, out, secret, "%s log:\n%s", format, out)
		}
		require.Contains(t, out, "sk_"+Redacted)
		require.Contains(t, out, "X-Probe: a\\\\x01b", "the rest of the request stays readable (%s)", format)
		if format == "json" {
			require.Contains(t, out, `"n":3`, "numbers untouched")
		} else {
			require.Contains(t, out, "n=3", "numbers untouched")
		}
		require.Contains(t, out, "/pass/evt_01abc."+Redacted)
	}
}

func TestHandlerPassesPlainLinesUntouched(t *testing.T) {
	h := New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	for _, s := range []string{
		"request method=GET path=/v1/events/evt_01J2/orders status=200 key_id=key_01J2 client_ip=127.0.0.1",
		"risk_level task_done desk_lamp", "events_total 3",
	} {
		require.False(t, h.mayHold(s), s)
		require.Equal(t, s, h.String(s))
	}
	require.True(t, h.mayHold("key sk_x"))
	require.True(t, h.mayHold("AUTHORIZATION"))
	require.Equal(t, "Bearer "+Redacted+" and pk_"+Redacted, h.String("Bearer abc.def and "+pk))
	require.Equal(t, "ApplePass "+Redacted, h.String("ApplePass 0123456789abcdef"))
	require.Equal(t, strings.Repeat("x", 10), h.String(strings.Repeat("x", 10)))
}

func BenchmarkPlainLine(b *testing.B) {
	h := New(slog.NewTextHandler(&bytes.Buffer{}, nil), odd)
	s := "/v1/events/evt_01J2ABCDEF/orders/ord_01J2ABCDEF"
	for b.Loop() {
		h.String(s)
	}
}
