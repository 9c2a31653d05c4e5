// Package manager assembles the controller: a controller-runtime manager whose cache is the
// only cache in the process, the store over it, the informers (registered before the manager
// starts, so every replica's cache fills whether it leads or not), the leader-only sync loop,
// leader election, the health and readiness probes and the metrics endpoint.
package manager
