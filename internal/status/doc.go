// Package status tells people what the sync loop did: Kubernetes Events on the objects that
// could not be translated or that a gateway refused, and Prometheus metrics of every round.
//
// A problem that persists is reported once, when it first appears, not on every resync: the
// reporter remembers the problems of the previous round and only speaks of new ones.
package status
