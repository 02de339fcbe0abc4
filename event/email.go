package event

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxEmailLen bounds an email address (RFC 5321's path limit less the
// angle brackets).
const MaxEmailLen = 320

// ValidEmail accepts a bare addr-spec (no display name, no quoted local
// part, no comments, no surrounding space) with a dotted domain: what a
// ticket can be mailed to. It is the one email rule of the service: the
// binder, the hosted pages and the core all ask it.
func ValidEmail(s string) bool {
	at := strings.LastIndexByte(s, '@')
	if at < 1 || at > 64 || len(s) > MaxEmailLen {
		return false
	}
	local, domain := s[:at], s[at+1:]
	prevDot := true // no leading dot
	for i := 0; i < len(local); i++ {
		c := local[i]
		switch {
		case c == '.':
			if prevDot {
				return false
			}
			prevDot = true
			continue
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c >= 0x80,
			strings.IndexByte("!#$%&'*+/=?^_`{|}~-", c) >= 0:
		default:
			return false
		}
		prevDot = false
	}
	if prevDot {
		return false
	}
	labels := 0
	for label := range strings.SplitSeq(domain, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c >= 0x80) {
				return false
			}
		}
		labels++
	}
	return labels >= 2 && utf8.ValidString(s)
}

// checkEmail is the core's check of an email field (the binder and the
// hosted pages ask ValidEmail too, so every surface accepts the same
// addresses): the trimmed value must be ValidEmail. An empty optional
// field passes. It returns the trimmed address.
func checkEmail(field, s string, required bool) (string, error) {
	e := strings.TrimSpace(s)
	if e == "" && !required {
		return "", nil
	}
	if !ValidEmail(e) {
		return "", FieldError(field, "must be an email address")
	}
	return e, nil
}

// MaxNameLen bounds a person's name, in characters.
const MaxNameLen = 200

// ValidName accepts a person's name of at most MaxNameLen characters once
// trimmed (empty is allowed: the name is optional).
func ValidName(s string) bool { return utf8.RuneCountInString(strings.TrimSpace(s)) <= MaxNameLen }

// checkName is the core's check of a person's name field: it returns the
// trimmed name.
func checkName(field, s string) (string, error) {
	if !ValidName(s) {
		return "", FieldError(field, fmt.Sprintf("must be at most %d characters", MaxNameLen))
	}
	return strings.TrimSpace(s), nil
}

// NormEmail is the identity of a person's address: trimmed and compared
// case-insensitively. Two registrations whose NormEmail are equal are the
// same person.
func NormEmail(e string) string { return strings.ToLower(strings.TrimSpace(e)) }
