// Package explain answers, for one request and one Kong configuration, which route takes it and
// why, and what it came from: the route and the parts of Kong's priority that put it first, the
// service, upstream and targets, the request as the upstream receives it, the plugins in Kong's
// order, the Kubernetes objects each entity was translated from, the routes that also match and
// why each loses, the nearest routes when none matches, and the objects translation left out
// that would have taken the request. `konductor explain` prints it.
//
// It decides nothing itself: the route, the upstream request and Kong's own answers come from
// internal/kongrouter (the router the Kong emulator's proxy routes with), the plugins from
// internal/kongplugins, the source objects from the entities' k8s-* tags and, for an Ingress's
// rule and path, from translator.IngressPaths. So an explanation names the route the emulator's
// proxy picks for the same request (one router, two uses).
//
// Files:
//
//	explain.go    Explainer, Explain: the route, service, upstream, upstream request, plugins
//	why.go        why a candidate loses (kongrouter.Decider), what differs for the nearest routes
//	sources.go    entities' tags -> Kubernetes objects; Ingress rule/path, HTTPRoute rule/match
//	conflicts.go  routes that can never win, and hosts shared across namespaces (--all-conflicts)
//	render.go     text; JSON and YAML are the types' own encoding
package explain
