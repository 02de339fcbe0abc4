// Package ticketpdf renders a buyer's ticket as a one-page PDF
// (decisions §21): the event, the attendee, the ticket type, the date and
// venue in the event's time zone, and the check-in code as text and as a
// QR code large enough to scan from paper (QRSizeMM on an A4 page, error
// correction level M, a quiet zone of four modules).
//
// The PDF is built on each request from the registration as it is now,
// so nothing is cached and a changed event or a cancelled registration is
// never printed stale. Render takes about 0.6 ms of CPU (BenchmarkRender).
//
// Text uses the PDF core font Helvetica, whose encoding is Windows-1252:
// Latin scripts print as typed, other characters (CJK, Cyrillic...) print
// as "?" (Transliterate). The check-in code is ASCII and always prints.
//
// The package does no I/O beyond the writer it is given and imports
// nothing of the service's shell (no actors, no http): the pass page's
// handler fills a Ticket and calls Render. Render is safe for concurrent
// use.
package ticketpdf
