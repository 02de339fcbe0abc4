// Package money writes amounts the way people read them, in one place for
// every page that shows money: the hosted pages (in the buyer's language)
// and the console. Format is a pure function of its arguments, safe from
// any goroutine.
package money
