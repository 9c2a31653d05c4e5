// Package dataplane is the sync loop: it turns the cache into Kong configuration and keeps every
// gateway in step with it.
//
// The loop runs only on the leader. Its first action is the cache barrier: it waits until every
// informer the store reads reports synced (client-go's DoneChecker channels, no polling and no
// fixed sleep), and sends nothing to any gateway before that. Then it syncs once, and again on
// every change event (a burst of events is coalesced into one sync), every resync period, and
// after a failure on a jittered exponential backoff. Timers exist only for those three jobs.
package dataplane
