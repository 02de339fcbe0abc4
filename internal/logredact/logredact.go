package logredact

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
)

// Redacted replaces what is cut out.
const Redacted = "[redacted]"

// literalMin is the shortest exact secret New takes: a shorter one would
// redact ordinary words.
const literalMin = 8

// Handler is a slog.Handler that redacts credentials (see the package
// doc) before handing each record to the next handler.
type Handler struct {
	next     slog.Handler
	literals []string
}

// New returns a Handler writing to next. literals are exact secrets to cut
// out wherever they appear (empty and short ones are ignored).
func New(next slog.Handler, literals ...string) *Handler {
	h := &Handler{next: next}
	for _, l := range literals {
		if len(l) >= literalMin {
			h.literals = append(h.literals, l)
		}
	}
	return h
}

// Enabled reports whether the next handler takes records at l.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

// Handle redacts r's message and attributes and passes it on.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.String(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

// WithAttrs redacts attrs once, here, rather than on every record.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = h.attr(a)
	}
	return &Handler{next: h.next.WithAttrs(red), literals: h.literals}
}

// WithGroup returns a Handler whose next handler opens the group.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), literals: h.literals}
}

// secretKeys are attribute keys whose whole value is a secret.
var secretKeys = []string{"authorization", "cookie", "password", "secret", "token"}

func (h *Handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	if v.Kind() != slog.KindGroup && v.Kind() != slog.KindString && v.Kind() != slog.KindAny {
		return slog.Attr{Key: a.Key, Value: v} // numbers, times, durations, bools
	}
	lk := strings.ToLower(a.Key)
	for _, k := range secretKeys {
		if strings.Contains(lk, k) {
			return slog.String(a.Key, Redacted)
		}
	}
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.String(v.String()))
	case slog.KindGroup:
		g := v.Group()
		red := make([]any, len(g))
		for i, ga := range g {
			red[i] = h.attr(ga)
		}
		return slog.Group(a.Key, red...)
	}
	// Any other value is written by its text (an error, a Stringer, a
	// struct): look at that text, and if it holds a secret write the
	// redacted text instead of the value.
	var s string
	switch x := v.Any().(type) {
	case error:
		s = x.Error()
	case fmt.Stringer:
		s = x.String()
	case []byte:
		s = string(x)
	default:
		s = fmt.Sprintf("%+v", x)
	}
	if r := h.String(s); r != s {
		return slog.String(a.Key, r)
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// The patterns. Values end at a real CR or LF, at a quote that ends a
// quoted string, or at an escaped \r or \n (fasthttp quotes raw requests
// with %q); an escaped control byte inside the value does not end it.
var (
	headerValue = regexp.MustCompile(`(?i)\b(authorization|proxy-authorization|cookie|set-cookie|x-api-key)(\s*[:=]\s*)(?:[^\r\n"\\]|\\[^rn])*`)
	schemeCred  = regexp.MustCompile(`(?i)\b(bearer|basic|applepass)(\s+|\\t)(?:[^\s"\\,;]|\\[^rnt\s])+`)
	prefixed    = regexp.MustCompile(`\b(sk|pk|dk|adm|whsec|pgs|rk)_[A-Za-z0-9][A-Za-z0-9_\-]*`)
	cookies     = regexp.MustCompile(`\b(ticketd_console(?:_login)?)=[^;\s"\\]+`)
	passPath    = regexp.MustCompile(`(/pass/(?:evt_[0-9A-Za-z]+\.)?)[^/\s"?#\\]+`)
)

// String returns s with every credential cut out.
func (h *Handler) String(s string) string {
	if !h.mayHold(s) {
		return s
	}
	for _, l := range h.literals {
		s = strings.ReplaceAll(s, l, Redacted)
	}
	s = headerValue.ReplaceAllString(s, "${1}${2}"+Redacted)
	s = schemeCred.ReplaceAllString(s, "${1}${2}"+Redacted)
	s = prefixed.ReplaceAllString(s, "${1}_"+Redacted)
	s = cookies.ReplaceAllString(s, "${1}="+Redacted)
	s = passPath.ReplaceAllString(s, "${1}"+Redacted)
	return s
}

// mayHold is the cheap test that spares the patterns most lines: whether s
// holds a marker any pattern starts with.
func (h *Handler) mayHold(s string) bool {
	for _, l := range h.literals {
		if strings.Contains(s, l) {
			return true
		}
	}
	for i := strings.IndexByte(s, '_'); i >= 0; {
		for _, p := range prefixes {
			if i >= len(p) && s[i-len(p):i] == p && (i == len(p) || !isWord(s[i-len(p)-1])) {
				return true
			}
		}
		if strings.HasPrefix(s[i:], "_console") {
			return true
		}
		j := strings.IndexByte(s[i+1:], '_')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	// One pass for the words the header patterns start with.
	for i := 0; i < len(s); i++ {
		switch s[i] | 0x20 {
		case 'a':
			if hasFold(s[i:], "auth") || hasFold(s[i:], "applepass") {
				return true
			}
		case 'b':
			if hasFold(s[i:], "bearer") || hasFold(s[i:], "basic") {
				return true
			}
		case 'c':
			if hasFold(s[i:], "cookie") {
				return true
			}
		case 'x':
			if hasFold(s[i:], "x-api-key") {
				return true
			}
		case '/':
			if strings.HasPrefix(s[i:], "/pass/") {
				return true
			}
		}
	}
	return false
}

// hasFold reports whether s starts with prefix (lower case ASCII) in any
// case.
func hasFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// prefixes are the token prefixes, without their underscore.
var prefixes = []string{"sk", "pk", "dk", "rk", "adm", "pgs", "whsec"}

func isWord(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}
