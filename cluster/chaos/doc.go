// Package chaos holds the cluster's fault run (make cluster-chaos): three
// real ticketd processes on loopback under an order load, with in turn a
// kill -9 of the hot event's owner, a SIGSTOP of its owner for 15 s, and
// a node restarted on an empty data dir. After each fault it checks that
// every acknowledged order is present, that the nodes agree on one owner,
// and how long writes stopped. It has only tests; they run when
// TICKETD_CLUSTER_CHAOS=1.
package chaos
