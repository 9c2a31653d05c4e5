// Package manifest reads Kubernetes objects from YAML and JSON files, for `konductor
// translate` and for the translator's golden tests. Both feed the objects to the same store
// the controller reads, so what a user previews is what the controller would send.
//
// Decoding is strict (unknown and duplicate fields are errors) and typed with the
// controller's own scheme: a typo in a manifest is reported with the file and the document
// index rather than silently dropped, which would make the preview lie.
package manifest
