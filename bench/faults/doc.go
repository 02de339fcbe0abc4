// Package faults holds the process-level storage fault tests: the real
// ticketd binary, built by the test, on a small tmpfs that an order flood
// fills up. They need root (mount) and skip with a message without it.
//
// What they check is the contract of package persistence's "Storage
// faults": prompt 503s with reason STORAGE_UNAVAILABLE, /readyz 503, a
// fail-stop exit with a clear log line, SIGTERM within 10 s, a restart
// that writes again once space is freed, and no acknowledged order lost.
package faults
