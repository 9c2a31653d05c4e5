package translator

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/objgraph"
)

// Bounds on what one object may become (docs/security.md, "Amplification"). Where Kong's
// entities grow with the product of an object's fields rather than with their sum, a small
// object a tenant writes could become hundreds of thousands of entities: controller memory,
// a body past Kong's admin limit, a router every gateway rebuilds. An object past a bound is
// left out with everything that depends on it (as a plugin it cannot have: kong_plugins_failclosed.go)
// and a problem naming the bound; nothing is served in part.
const (
	// MaxRoutesPerGatewayRoute is the most Kong routes one HTTPRoute, GRPCRoute, TCPRoute,
	// TLSRoute or UDPRoute may make: the most the traditional router's translation of an
	// HTTPRoute can make within the API's own limits (16 rules of 64 matches). The expressions
	// router splits a match by hostname and listener (16 hostnames: 16 times as many).
	MaxRoutesPerGatewayRoute = 1024
	// MaxPluginCombinations is the most plugin entities one KongPlugin or KongClusterPlugin may
	// make from consumers (or consumer groups) times services and routes: KIC's combination
	// rule makes one per consumer and route, so one plugin on 400 consumers and 400 routes
	// is 160,000 entities. A plugin on routes or services alone grows with them, unbounded.
	MaxPluginCombinations = 10000
	// MaxPluginConfigBytes is the largest configuration (as JSON) of one plugin object: a
	// plugin's configuration is copied into each of its entities, so twelve of 900 KiB took a
	// DB-less body past Kong's 10 MiB admin limit.
	MaxPluginConfigBytes = 256 << 10
)

// refuseBound leaves obj out, with everything that depends on it, for passing a bound.
func (b *builder) refuseBound(obj client.Object, gvk schema.GroupVersionKind, field, format string, args ...any) {
	b.refusals = append(b.refusals, refusal{referrer: kongstate.RefFor(obj, gvk), field: field, bound: true, why: fmt.Sprintf(format, args...)})
}

// countGatewayRoute counts a Kong route made for obj, a Gateway API route, and refuses obj
// once the count passes MaxRoutesPerGatewayRoute.
func (b *builder) countGatewayRoute(obj client.Object, gvk schema.GroupVersionKind) {
	n := objgraph.NodeOf(kongstate.RefFor(obj, gvk))
	if b.gatewayRouteCounts == nil {
		b.gatewayRouteCounts = map[objgraph.Node]int{}
	}
	b.gatewayRouteCounts[n]++
	if b.gatewayRouteCounts[n] == MaxRoutesPerGatewayRoute+1 {
		b.refuseBound(obj, gvk, "spec.rules", "it makes more than %d Kong routes, the bound for one %s (hostnames times rules times matches)", MaxRoutesPerGatewayRoute, gvk.Kind)
	}
}

// multiplied reports whether r's plugin entities are a product: consumers (or consumer
// groups) times services and routes.
func (r pluginRelations) multiplied() bool {
	return len(r.consumers)+len(r.consumerGroups) > 0 && len(r.services)+len(r.routes) > 0
}

// combinationCount is len(r.combinations()), without making them.
func (r pluginRelations) combinationCount() int {
	owners := len(r.consumers)
	if owners == 0 {
		owners = len(r.consumerGroups)
	}
	places := len(r.services) + len(r.routes)
	switch {
	case owners == 0:
		return places
	case places == 0:
		return owners
	}
	return owners * places
}
