// Package chaos holds the cluster's fault run (make cluster-chaos): three
// real ticketd processes on loopback under an order load, with in turn a
// kill -9 of the hot event's owner (killRounds times, each followed by its
// restart), a SIGSTOP of its owner for 15 s, a node restarted on an
// empty data dir, and a rolling restart (each node stopped gracefully,
// started again and given its shards back). After each fault it checks that every acknowledged order
// is present, that the nodes agree on one owner, that this owner made the
// event's newest claim (read from the nodes' logs), that no two claims
// share an epoch and that a fault that took the owner left a newer epoch;
// and it reports how long writes stopped after each kill (min, median,
// max) and the longest write gap of each planned move (each rolling
// restart's stop, and its start with the shards' return, measured in a
// window of its own: the checks between them, which list every order
// through the owner, are reported apart). TestClusterFresh
// floods a cluster just formed (12 clients over the three nodes, keyed
// orders) and TestClusterRollingRestart restarts each node of a live
// drop (one event per shard) in turn. The contract asserted: writes
// resume within 15 s of a kill -9; a new cluster acknowledges its first
// order, and a planned move pauses an event's writes, under 1 s
// (plannedWithin). It has only tests; they run when
// TICKETD_CLUSTER_CHAOS=1.
package chaos
