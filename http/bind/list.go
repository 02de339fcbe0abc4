package bind

import (
	"encoding/base64"

	"ticketd/event"
)

// Page size bounds of every list operation.
const (
	DefaultPageSize = 50
	MaxPageSize     = 100
	maxCursorLen    = 512
)

// ListQuery holds the pagination parameters of a list operation; embed it
// in a route's Query struct. An absent limit binds as DefaultPageSize. The
// binder gives any query parameter named limit or cursor these rules, so
// query structs of the core need not repeat them.
type ListQuery struct {
	Limit  int    `query:"limit" v:"min=1,max=100" doc:"Page size, 1 to 100 (default 50)."`
	Cursor string `query:"cursor" v:"maxLen=512" doc:"The previous page's nextCursor."`
}

func (q *ListQuery) QueryDefaults() {
	if q.Limit == 0 {
		q.Limit = DefaultPageSize
	}
}

// List is the envelope of every list response: the core's, so lists the
// machine pages and lists this package pages are one type on the wire and
// in the OpenAPI documents.
type List[T any] = event.List[T]

// NewList builds a list envelope; next is the position after the last item
// ("" when there is no more), encoded as an opaque cursor.
func NewList[T any](items []T, hasMore bool, next string) List[T] {
	if items == nil {
		items = []T{} // "data": [] never null
	}
	l := List[T]{Data: items, HasMore: hasMore}
	if hasMore && next != "" {
		c := EncodeCursor(next)
		l.NextCursor = &c
	}
	return l
}

// EncodeCursor makes an opaque cursor of a position (e.g. the last id).
func EncodeCursor(pos string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(pos))
}

// DecodeCursor returns the position of a cursor ("" for an empty cursor),
// or a 400 naming the cursor parameter.
func DecodeCursor(c string) (string, error) {
	if c == "" {
		return "", nil
	}
	if len(c) > maxCursorLen {
		return "", event.FieldError("cursor", "is not a valid cursor")
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) == 0 {
		return "", event.FieldError("cursor", "is not a valid cursor")
	}
	return string(b), nil
}
