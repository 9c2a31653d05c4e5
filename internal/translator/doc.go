// Package translator turns a store snapshot into Kong configuration, the way the Kong
// Ingress Controller does (docs/translation-rules.md is the rulebook), so that a Kong
// that KIC managed is adopted by konductor without a single entity being re-created.
//
// Translate is a pure function: no I/O, no clock, no randomness, and every map is read in
// sorted order, so the same objects give the same bytes however the cache happened to list
// them. That is what lets the DB-less sync skip a push by comparing bodies.
//
// Bad input never stops the rest. Whatever cannot be translated is left out and reported as
// a Problem naming the object and the field. Where KIC passes a value on and lets Kong reject
// the whole configuration (an invalid regex path, a bad host or header name...), konductor
// checks it here with Kong's own rules and leaves out only the offending piece: one broken
// Ingress must not take down every other route on the gateway.
//
// The work is split in small processors over a shared builder: ingress_rules.go (rules, paths,
// default backend), ingress_annotations.go (route overrides), service_backends.go (Kong services, upstreams,
// targets, service overrides), tls.go (certificates and SNIs), plugins.go (KongPlugin
// attachment) and validate.go (Kong's validation rules).
package translator
