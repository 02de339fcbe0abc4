package shell

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// fieldNames are the words a person reads for the API's field names, in
// the console's messages: a refusal says "The sale end must not be before
// the sale start.", never "closesAt".
var fieldNames = map[string]string{
	"name": "the name", "ttName": "the name", "priceAmount": "the price", "amount": "the amount",
	"capacity": "the capacity", "startsAt": "the start", "endsAt": "the end", "timezone": "the timezone",
	"currency": "the currency", "opensAt": "the sale start", "closesAt": "the sale end", "siteUrl": "the site address",
	"description": "the description", "email": "the email", "role": "the role", "password": "the password",
	"password2": "the repeated password", "deadline": "the deadline", "hoursBeforeStart": "the hours before the start",
	"feePercent": "the fee", "venue": "the venue", "address": "the address", "onlineUrl": "the online link",
	"code": "the code", "promoCode": "the code", "maxUses": "the number of uses", "percentOff": "the percentage",
	"amountOff": "the amount off", "expiresAt": "the expiry", "origins": "the origins", "version": "the version",
	"label": "the label", "count": "the number", "reason": "the reason", "registrationTypeId": "the ticket type",
	"quantity": "the quantity", "status": "the status", "url": "the address", "lang": "the language",
	"isPublic": "the visibility", "allowWaitlist": "the waitlist", "requiresApproval": "the approval",
}

// apiWord matches a camelCase or lower-case word that may be a field name.
var apiWord = regexp.MustCompile(`\b[a-z]+(?:[A-Z][a-z]*)+\b|\bamount\b`)

// Say writes the refusal reason of field as a sentence a person would
// write: "The price must be a decimal number like 49.99." A reason that
// is already a sentence of its own ("an event needs a start time to be
// published") is only capitalized; API field names inside it become words.
func Say(field, reason string) string {
	reason = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(reason), "."))
	// A reason that names its own field first ("amount must be ...")
	// speaks of the field at fault, in the form's words.
	if w, rest, ok := strings.Cut(reason, " "); ok && fieldNames[field] != "" && (fieldNames[w] != "" || w == "it") {
		reason = fieldNames[field] + " " + rest
	}
	reason = apiWord.ReplaceAllStringFunc(reason, func(w string) string {
		if n, ok := fieldNames[w]; ok {
			return n
		}
		return w
	})
	first, _, _ := strings.Cut(reason, " ")
	switch first {
	case "must", "is", "has", "cannot", "can", "should", "was", "needs", "may", "does", "are", "holds":
		subject := fieldNames[field]
		if subject == "" {
			subject = "this field"
		}
		reason = subject + " " + reason
	}
	return capitalize(reason) + "."
}

func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

// statusNames are the words the console shows for the machine's statuses
// (of events, ticket types, orders, registrations, refunds, mail).
var statusNames = map[string]string{
	"draft": "draft", "published": "published", "archived": "archived", "open": "on sale", "closed": "sales closed",
	"awaiting_payment": "awaiting payment", "paid": "paid", "confirmed": "confirmed", "cancelled": "cancelled",
	"canceled": "cancelled", "expired": "expired", "refunded": "refunded", "partially_refunded": "partly refunded",
	"pending_approval": "awaiting approval", "waitlisted": "on the waitlist", "rejected": "rejected", "held": "held",
	"pending": "pending", "succeeded": "done", "failed": "failed", "parked": "stopped after retries", "sent": "sent",
	"checked_in": "checked in", "declined": "declined", "approved": "approved", "free": "free",
}

// statusText is a status as a person reads it; an unknown one loses its
// underscores.
func statusText(s string) string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return strings.ReplaceAll(s, "_", " ")
}

func init() { funcs["statusText"] = statusText }
