// Package browsertest starts Debian's chromium headless for the browser
// tests of the hosted pages and the console: one browser per test at a
// phone's window size, the console errors and Content Security Policy
// violations it logs, and full-page screenshots left as test artifacts in
// bin/test-artifacts at the module's root (git-ignored).
//
// Concurrency: Start's browser is the calling test's, closed when the test
// ends; the problems function it answers may be called from any goroutine.
package browsertest
