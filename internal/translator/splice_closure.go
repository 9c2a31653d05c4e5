package translator

import (
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/objgraph"
)

// closureWalk is walkClosure's work in progress: the queues of what joined the closure and
// is not looked at yet.
type closureWalk struct {
	*spliceRound
	ingQueue, svcQueue []nsName
	routeQueue         []gatewayapi.RouteKey
	expanded           map[nsName]bool
	problemNodes       map[objgraph.Node]struct{} // of the previous result, made on first use
	tlsTargets         map[nsName]bool
	objects            int // Ingresses and routes of the snapshot
}

// walkClosure finds the closure: changed Ingresses and Gateway API routes, the Services the
// Ingresses name or refer to, every Ingress and route naming or referring to one of those,
// until nothing is added. The Services a route of the closure names are only read (each of
// its rules has a Kong service of its own): they join the closure only when they changed, or
// when the previous result holds something about them (readOnlyService).
func (r *spliceRound) walkClosure() string {
	r.closure = map[nsName]struct{}{}
	r.routeClosure = map[gatewayapi.RouteKey]struct{}{}
	r.readOnly = map[nsName]struct{}{}
	w := &closureWalk{spliceRound: r, expanded: map[nsName]bool{}, tlsTargets: backendTLSTargets(r.snap, r.opts)}
	for k := range r.ingChanges {
		w.addIngress(k)
	}
	for k := range r.routeChanges {
		w.addRoute(k)
	}
	for s := range r.services {
		w.addService(s)
	}
	w.objects = len(r.prev.ingresses.m)
	for _, ix := range r.prev.routes {
		w.objects += ix.len()
	}
	for len(w.ingQueue) > 0 || len(w.svcQueue) > 0 || len(w.routeQueue) > 0 {
		var why string
		switch {
		case len(w.svcQueue) > 0:
			s := w.svcQueue[0]
			w.svcQueue = w.svcQueue[1:]
			why = w.expandService(s)
		case w.tooMany():
			why = "the change reaches too many Ingresses and routes"
		case len(w.routeQueue) > 0:
			k := w.routeQueue[0]
			w.routeQueue = w.routeQueue[1:]
			why = w.expandRoute(k)
		default:
			k := w.ingQueue[0]
			w.ingQueue = w.ingQueue[1:]
			why = w.expandIngress(k)
		}
		if why != "" {
			return why
		}
	}
	for s := range r.services {
		delete(r.readOnly, s) // joined the closure after it was read
	}
	r.t.Stats.LastClosure, r.t.Stats.LastClosureRoutes = len(r.closure), len(r.routeClosure)
	return ""
}

func (w *closureWalk) addIngress(k nsName) {
	if _, ok := w.closure[k]; !ok {
		w.closure[k] = struct{}{}
		w.ingQueue = append(w.ingQueue, k)
	}
}

func (w *closureWalk) addRoute(k gatewayapi.RouteKey) {
	if _, ok := w.routeClosure[k]; !ok {
		w.routeClosure[k] = struct{}{}
		w.routeQueue = append(w.routeQueue, k)
	}
}

func (w *closureWalk) addService(s nsName) {
	w.services[s] = struct{}{}
	if !w.expanded[s] {
		w.expanded[s] = true
		w.svcQueue = append(w.svcQueue, s)
	}
}

// tooMany: a closure above maxClosureShare of the Ingresses and routes is translated in full.
func (w *closureWalk) tooMany() bool {
	return !w.t.noSizeLimit && (len(w.closure)+len(w.routeClosure))*maxClosureShare > w.objects
}

// readService takes in a Service a closure route names: read only when the previous result
// says nothing about it (readOnlyService), else into the closure.
func (w *closureWalk) readService(s nsName) string {
	if w.expanded[s] {
		return ""
	}
	if svc := w.prev.services.get(s); svc != nil && !localService(svc) {
		return "a Service of the change has plugins"
	}
	if w.problemNodes == nil {
		w.problemNodes = make(map[objgraph.Node]struct{}, len(w.prev.res.Problems))
		for _, p := range w.prev.res.Problems {
			w.problemNodes[objgraph.NodeOf(p.Object)] = struct{}{}
		}
	}
	if readOnlyService(w.prev, s, w.problemNodes) {
		w.readOnly[s] = struct{}{}
	} else {
		w.addService(s)
	}
	return ""
}

// expandService takes in every Ingress and route naming or referring to the Service s.
func (w *closureWalk) expandService(s nsName) string {
	for _, svc := range []*corev1.Service{w.svcChanges[s], w.prev.services.get(s)} {
		if svc != nil && !localService(svc) {
			return "a Service of the change has plugins"
		}
	}
	for _, from := range w.prev.res.Graph.ReferredBy(ref(gvkService, s.ns, s.name)) {
		switch {
		case from.Kind == gvkIngress.Kind && from.Group == gvkIngress.Group:
			w.addIngress(nsName{from.Namespace, from.Name})
		case isRouteKind(from.Group, from.Kind) && routeTranslated(from.Kind, w.opts):
			w.addRoute(gatewayapi.RouteKey{Kind: from.Kind, Namespace: from.Namespace, Name: from.Name})
		default:
			return "a Service of the change is referred to by a " + from.Kind
		}
	}
	for k := range w.prev.byService.namedBy(s).All() {
		w.addIngress(k)
	}
	if refs := w.prev.res.Graph.References(ref(gvkService, s.ns, s.name)); len(refs) > 0 {
		return "a Service of the change refers to a " + refs[0].Kind
	}
	return ""
}

// expandRoute reads the Services the route k names (old and new version) and checks that its
// translation is local to the closure.
func (w *closureWalk) expandRoute(k gatewayapi.RouteKey) string {
	if w.opts.ExpressionRoutes && expressionsPriorities(k.Kind) {
		// The expressions router's priorities are assigned across every route.
		return aRoute(k.Kind) + " of the change under the expressions router"
	}
	// The oldest route on a port takes it: the routes sharing a port are translated together.
	for _, other := range streamPortSharers(w.snap, k, w.oldRoute(k), w.routeNow(k)) {
		w.addRoute(other)
	}
	if w.opts.CombinedServicesFromDifferentHTTPRoutes && k.Kind == gatewayapi.KindHTTPRoute {
		// Its Kong services may hold the rules of other HTTPRoutes of its namespace
		// (gateway_httproute_combined.go), which the partial translation would not have.
		return "an HTTPRoute of the change with combined services"
	}
	for _, rt := range []client.Object{w.oldRoute(k), w.routeNow(k)} {
		if rt == nil {
			continue
		}
		if why := localRoute(k.Kind, rt); why != "" {
			return why
		}
		for _, s := range routeServicesNamed(rt) {
			if w.tlsTargets[s] {
				return "a Service " + aRoute(k.Kind) + " of the change names has a BackendTLSPolicy"
			}
			if why := w.readService(s); why != "" {
				return why
			}
		}
	}
	if from := w.prev.res.Graph.ReferredBy(routeRef(k)); len(from) > 0 {
		return aRoute(k.Kind) + " of the change is referred to by a " + from[0].Kind
	}
	for _, to := range w.prev.res.Graph.References(routeRef(k)) {
		switch {
		case to.Kind == gvkService.Kind && to.Group == "":
			if why := w.readService(nsName{to.Namespace, to.Name}); why != "" {
				return why
			}
		case routeMayRefer(to.Group, to.Kind):
		default:
			return aRoute(k.Kind) + " of the change refers to a " + to.Kind
		}
	}
	return ""
}

// expandIngress takes in the Services the Ingress k names or refers to (old and new version)
// and checks that its translation is local to the closure.
func (w *closureWalk) expandIngress(k nsName) string {
	for _, ing := range []*netv1.Ingress{w.oldIngress(k), w.prev.ingresses.get(k)} {
		if ing == nil {
			continue
		}
		if why := ingressLocality(ing, true); why != "" {
			return why
		}
		if _, ok := ing.Annotations[annPlugins]; ok {
			w.withPlugins = true
		}
		for _, s := range servicesNamed(ing) {
			w.addService(s)
		}
	}
	if from := w.prev.res.Graph.ReferredBy(ref(gvkIngress, k.ns, k.name)); len(from) > 0 {
		return "an Ingress of the change is referred to by a " + from[0].Kind
	}
	for _, to := range w.prev.res.Graph.References(ref(gvkIngress, k.ns, k.name)) {
		switch {
		case to.Kind == gvkService.Kind && to.Group == "":
			w.addService(nsName{to.Namespace, to.Name})
		case to.Kind == gvkIngressClass.Kind && to.Group == gvkIngressClass.Group:
		case isPluginKind(to):
			// Its plugins are made again (spliceIngressPlugins).
			w.withPlugins = true
		default:
			return "an Ingress of the change refers to a " + to.Kind
		}
	}
	return ""
}
