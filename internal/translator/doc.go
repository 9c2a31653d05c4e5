// Package translator turns a store snapshot into Kong configuration, the way the Kong
// Ingress Controller does (docs/translation-rules.md is the rulebook; code cites it as
// translation-rules.md §N), so that a Kong that KIC managed is adopted by konductor without a
// single entity being re-created.
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
// # A map of the package
//
// One builder (translator.go: Options, Result, Build, the builder and its pipeline) runs the
// sources in KIC's order (translation-rules.md §2) over a shared model and records every
// reference it follows, and every value objects meet on, in the object graph (package
// objgraph; translation-rules.md §12.4; TestEveryReadIsRecorded). Files are named by family:
//
//	translator.go, model.go, kinds.go, problems.go, result.go
//	        the builder; the Kong services and routes the sources build together; the kinds
//	        read (GroupVersionKinds, route kinds); Problems and their order; what a Result
//	        holds beyond state, problems and graph (its Kong services as parts, the notes
//	        translation takes of what it met)
//	ingress_*.go          Ingress rules, paths and default backend, route annotations,
//	                      konghq.com/rewrite
//	service_*.go          Kubernetes Services: Kong services' backends, upstreams and targets
//	                      (KongIngress, KongUpstreamPolicy), targets a tenant may not reach,
//	                      KongServiceFacade
//	kong_*.go             Kong's own kinds: consumers and credentials, vaults, custom
//	                      entities, licenses, TCPIngress and UDPIngress, plugin
//	                      configuration, objects left out for a plugin that cannot be applied
//	plugins.go            KongPlugin and KongClusterPlugin attachment and combinations
//	tls.go, tls_*.go      certificates and SNIs of Ingresses and TCPIngresses, the RSA+ECDSA
//	                      pair, CA certificates
//	gateway_*.go          Gateway API: routes of every kind, their backends, listener
//	                      certificates, BackendTLSPolicy, what Gateways refer to
//	expressions*.go       the expressions router (Ingress routes; stream routes)
//	validate.go           Kong's validation rules for values passed on from users
//	entitytags.go, sharedvalues.go
//	                      what many entities share, made once per translation
//
// Above the translation sit the parts that use the graph to do less work; nothing in the
// translation's files uses them (TestTranslationKnowsNothingAbove):
//
//	relevance.go          which informer events can change a translation
//	incremental*.go, splice_*.go
//	                      Incremental: translate only what a change reaches and splice it
//	                      into the previous Result (incremental.go's comment says when)
//	parallel.go           the first translation of a large cluster split over the cores
//
// Adding a kind: docs/architecture.md, "Adding a kind".
package translator
