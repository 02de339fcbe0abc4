// Package chaos holds the cluster's fault run (make cluster-chaos): three
// real ticketd processes on loopback under an order load, with in turn a
// kill -9 of the hot event's owner (killRounds times, each followed by its
// restart), a SIGSTOP of its owner for 15 s, and a node restarted on an
// empty data dir. After each fault it checks that every acknowledged order
// is present, that the nodes agree on one owner, that this owner made the
// event's newest claim (read from the nodes' logs), that no two claims
// share an epoch and that a fault that took the owner left a newer epoch;
// and it reports how long writes stopped after each kill (min, median,
// max). It has only tests; they run when
// TICKETD_CLUSTER_CHAOS=1.
package chaos
