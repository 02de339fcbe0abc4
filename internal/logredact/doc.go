// Package logredact keeps credentials out of the service's log. Handler
// wraps the one slog.Handler every part of ticketd writes through (app
// wraps it around the configured one), so no path, ours or a library's
// (fasthttp logs a refused request with its raw bytes), can write a secret:
// redaction is at the one place lines are written, not at each caller.
//
// What it redacts, in the message and every attribute (groups, errors and
// other values by their text):
//
//   - the value of an Authorization, Proxy-Authorization, Cookie,
//     Set-Cookie or X-Api-Key header, up to the end of its line, whether
//     the line ends in a real CR LF or an escaped one (%q output);
//   - the credential of "Bearer …", "Basic …" and "ApplePass …" (the
//     wallet web service's scheme);
//   - tokens by their prefix: sk_, pk_ (API keys), dk_ (door devices),
//     adm_ (admin token), whsec_ (webhook secrets), pgs_ (pages secret),
//     rk_ (restricted keys): the prefix stays, the rest becomes [redacted];
//   - the console's cookies (ticketd_console, ticketd_console_login) and
//     the secret part of a pass page path (/pass/evt_….[redacted]);
//   - the exact secrets given to New (an admin token set by the operator
//     need not look like one);
//   - the whole value of an attribute whose key names a secret
//     (authorization, cookie, password, secret, token).
//
// A line holding none of these is passed on untouched after a scan for a
// few markers, so the access log pays a few hundred nanoseconds a line.
// Handler is safe for concurrent use, as slog requires.
package logredact
