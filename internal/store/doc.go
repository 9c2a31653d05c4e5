// Package store is konductor's read-only, typed view over the controller-runtime manager's
// cache. It holds no objects of its own: every read goes through the manager's cache-backed
// client.Reader, so there is exactly one cache in the process (ARCHITECTURE.md, invariant 1).
//
// The store applies the two filters a KIC user expects, the ingress class (translation-rules.md §1.1)
// and the watched namespaces, and hands the translator a Snapshot: plain slices of objects that
// the translator may read but must not modify.
package store
