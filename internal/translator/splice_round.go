package translator

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"

	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/store"
)

// spliceRound is one round of Incremental's splice (partial): what the phases of splicePhases
// find and make, each from what the phases before it left. A phase that returns a reason
// ends the round: a full Build follows (the indexes of the previous round may have been
// updated in place by then; the full Build makes new ones).
type spliceRound struct {
	t    *Incremental
	prev *incrementalRound
	snap *store.Snapshot
	opts Options

	changeSet
	closureSet

	// The closure as a snapshot of its own, and the problem subjects its translation replaces.
	sub      *store.Snapshot
	subjects map[objgraph.Node]struct{}
	// The Gateway API attachment of the new snapshot, whether it was made from the previous
	// one, and the view of it the closure's routes are translated with.
	gw         *gatewayapi.Attachment
	reattached bool
	view       *gatewayapi.Attachment
	// The closure's translation and what it left out, merged with the previous one's.
	part    Result
	leftOut map[objgraph.Node]struct{}
	// The Kong services replaced (by name), their positions in prev.parts, and the services
	// of the result.
	replaced map[string]bool
	drop     []int
	merged   []servicePart

	res Result
}

// splicePhase is one step of the splice, in splicePhases' order.
type splicePhase struct {
	name string
	run  func(*spliceRound) (why string)
}

// splicePhases are the splice, in order: whether a splice may be tried at all, what changed
// (one change set), the closure of the change, the closure's translation, the splice of its
// Kong services, then each family's splice of what changed beside the closure (each calls
// the functions the full Build uses), and the indexes kept for the next round.
var splicePhases = []splicePhase{
	{"preconditions", (*spliceRound).preconditions},
	{"changes", (*spliceRound).findChanges},
	{"closure", (*spliceRound).walkClosure},
	{"closure snapshot", (*spliceRound).closureSnapshot},
	{"closure translation", (*spliceRound).translateClosure},
	{"Kong services", (*spliceRound).spliceServices},
	{"Ingresses' plugins", (*spliceRound).spliceIngressPlugins},
	{"certificates", (*spliceRound).spliceCertificates},
	{"consumers", (*spliceRound).spliceConsumers},
	{"plugins", (*spliceRound).splicePlugins},
	{"indexes", (*spliceRound).keepIndexes},
}

// partial is the splice; ok false (with the reason) when a full Build is needed.
func (t *Incremental) partial(snap *store.Snapshot, opts Options) (Result, bool, string) {
	r := &spliceRound{t: t, prev: t.prev, snap: snap, opts: opts}
	for _, phase := range splicePhases {
		if why := phase.run(r); why != "" {
			return Result{}, false, why
		}
	}
	return r.res, true, ""
}

// changeSet is what changed since the previous round, found once (findChanges) and read by
// every later phase: the changed objects' previous versions by key (nil: added).
type changeSet struct {
	ingChanges      map[nsName]*netv1.Ingress
	svcChanges      map[nsName]*corev1.Service
	sliceChanges    map[nsName]*discoveryv1.EndpointSlice
	routeChanges    map[gatewayapi.RouteKey]client.Object // of the kinds translated
	consumerChanges map[nsName]*kongv1.KongConsumer
	secretChanges   map[nsName]bool
	previousSecrets map[nsName]*corev1.Secret
	pluginChanges   pluginChanges
	// Secrets only plugins read, or only Ingresses' spec.tls, spliced on their own (taken out
	// of secretChanges; the rest is spliceConsumers').
	pluginSecrets map[nsName]bool
	certSecrets   map[nsName]bool
}

// The changes that cannot be spliced together, written once: each splice keeps the entities
// it does not make again as the previous result had them, so two splices that would both
// make one entity again refuse each other.

// ingressPluginsRefused: the Ingresses' plugin entities are made again with the closure
// (spliceIngressPlugins), which keeps the plugin and consumer entities as they were.
func (c *changeSet) ingressPluginsRefused() string {
	if !c.pluginChanges.empty() || len(c.secretChanges) > 0 || len(c.consumerChanges) > 0 {
		return "Ingresses' plugins changed with plugins, Secrets or consumers"
	}
	return ""
}

// consumersRefused: spliceConsumers translates its consumers' plugins as they were.
func (c *changeSet) consumersRefused() string {
	if !c.pluginChanges.empty() || len(c.pluginSecrets) > 0 {
		return "consumers and plugins changed together"
	}
	return ""
}

// closureSet is the closure of the change: the Ingresses and routes translated again, the
// Services that join them, and the Services closure routes only read.
type closureSet struct {
	closure      map[nsName]struct{}
	routeClosure map[gatewayapi.RouteKey]struct{}
	services     map[nsName]struct{} // the closure's Services
	readOnly     map[nsName]struct{} // Services closure routes name, not in the closure
	withPlugins  bool                // a closure Ingress has or had konghq.com/plugins
}

// preconditions: what makes any splice impossible, whatever changed.
func (r *spliceRound) preconditions() string {
	prev := r.prev
	switch {
	case !sameOptions(prev.opts, r.opts, prev.res.parts.readClock, prev.res.parts.readRustRegexes):
		return "options changed"
	case prev.res.parts.nameTaken:
		return "a route name was taken"
	case prev.res.parts.danglingForeignKey:
		return "a custom entity names an entity the configuration lacks"
	case !othersUnchanged(prev.snap, r.snap, changesSince(prev.snap, r.snap), relevanceRule{graph: prev.res.Graph, class: classOr(r.snap.IngressClass)}):
		return "objects other than Ingresses, Services, EndpointSlices, Gateway API routes, KongConsumers, Secrets and plugins changed"
	}
	return ""
}

// findChanges updates the indexes in place and records what changed. A snapshot that says
// what changed since the previous one (store.Follower: the round's one change set, made
// from the informers' events) is looked at there only; the kinds it does not follow, and
// every kind of a snapshot that does not follow the previous one, are compared list
// against list (objectIndex.update).
func (r *spliceRound) findChanges() string {
	prev, snap := r.prev, r.snap
	changes := changesSince(prev.snap, snap)
	r.services = map[nsName]struct{}{}
	var ok bool
	if r.ingChanges, ok = prev.ingresses.updateFrom(snap.Ingresses, changes, store.KindIngress); !ok {
		return "an Ingress twice"
	}
	if r.svcChanges, ok = prev.services.updateFrom(snap.Services, changes, store.KindService); !ok {
		return "a Service twice"
	}
	for k := range r.svcChanges {
		r.services[k] = struct{}{}
	}
	if r.sliceChanges, ok = prev.slices.updateFrom(snap.EndpointSlices, changes, store.KindEndpointSlice); !ok {
		return "an EndpointSlice twice"
	}
	for k, old := range r.sliceChanges {
		for _, es := range []*discoveryv1.EndpointSlice{old, prev.slices.get(k)} {
			if es != nil {
				if s, ok := serviceOf(es); ok {
					r.services[s] = struct{}{}
				}
			}
		}
		if old != nil {
			prev.byService.removeSlice(old)
		}
		if es := prev.slices.get(k); es != nil {
			prev.byService.addSlice(es)
		}
	}
	// A route of a kind not translated with opts changes nothing.
	r.routeChanges = map[gatewayapi.RouteKey]client.Object{}
	for _, ix := range prev.routes {
		changed, ok := ix.update(snap, changes)
		if !ok {
			return aRoute(ix.kind()) + " twice"
		}
		if routeTranslated(ix.kind(), r.opts) {
			for k, old := range changed {
				r.routeChanges[gatewayapi.RouteKey{Kind: ix.kind(), Namespace: k.ns, Name: k.name}] = old
			}
		}
	}
	if r.consumerChanges, ok = prev.consumers.updateFrom(snap.KongConsumers, changes, store.KindKongConsumer); !ok {
		return "a KongConsumer twice"
	}
	if r.secretChanges, r.previousSecrets, ok = prev.changedSecrets(snap.Secrets, changes); !ok {
		return "a Secret twice"
	}
	if r.pluginChanges, ok = prev.plugins.update(snap, changes); !ok {
		return "a plugin twice"
	}
	if why := secretsOfLeftOut(prev.res, r.secretChanges); why != "" {
		return why
	}
	r.pluginSecrets = takeSecretsReadOnlyBy(prev.res.Graph, r.secretChanges, isPluginKind)
	r.certSecrets = takeSecretsReadOnlyBy(prev.res.Graph, r.secretChanges, readsTLSSecrets)
	return ""
}

// routeNow is the route k of the new snapshot (nil when gone).
func (r *spliceRound) routeNow(k gatewayapi.RouteKey) client.Object {
	for _, ix := range r.prev.routes {
		if ix.kind() == k.Kind {
			return ix.get(nsName{k.Namespace, k.Name})
		}
	}
	return nil
}

// oldIngress is the Ingress k of the previous snapshot.
func (r *spliceRound) oldIngress(k nsName) *netv1.Ingress {
	if old, changed := r.ingChanges[k]; changed {
		return old
	}
	return r.prev.ingresses.get(k)
}

// oldRoute is the route k of the previous snapshot.
func (r *spliceRound) oldRoute(k gatewayapi.RouteKey) client.Object {
	if old, changed := r.routeChanges[k]; changed {
		return old
	}
	return r.routeNow(k)
}

// spliceIngressPlugins: the plugin entities of the closure's Ingresses, when one of them has
// or had konghq.com/plugins (incremental_ingressplugins.go).
func (r *spliceRound) spliceIngressPlugins() string {
	if !r.withPlugins {
		return ""
	}
	var why string
	if r.res, why = spliceIngressPlugins(r.prev, r.res, r.part, r.closure); why != "" {
		return why
	}
	if len(r.part.State.Plugins) > 0 {
		r.t.Stats.PartialIngressPlugins++
	}
	return ""
}

// spliceCertificates: the certificates of TLS Secrets only Ingresses' and TCPIngresses'
// spec.tls read (incremental_certificates.go).
func (r *spliceRound) spliceCertificates() string {
	if len(r.certSecrets) == 0 {
		return ""
	}
	var why string
	if r.res, why = spliceCertificates(r.res, r.certSecrets, r.previousSecrets, r.prev.secrets.get); why != "" {
		return why
	}
	r.t.Stats.PartialCertificates++
	return ""
}

// spliceConsumers: KongConsumers and the Secrets they read (incremental_consumers.go).
func (r *spliceRound) spliceConsumers() string {
	if len(r.consumerChanges) == 0 && len(r.secretChanges) == 0 {
		return ""
	}
	if why := r.consumersRefused(); why != "" {
		return why
	}
	var why string
	if r.res, why = spliceConsumers(r.prev, r.snap, r.opts, r.res, r.consumerChanges, r.secretChanges); why != "" {
		return why
	}
	r.t.Stats.PartialConsumers++
	return ""
}

// splicePlugins: KongPlugins, KongClusterPlugins and the Secrets only they read, made again
// in place (incremental_plugins.go).
func (r *spliceRound) splicePlugins() string {
	if r.pluginChanges.empty() && len(r.pluginSecrets) == 0 {
		return ""
	}
	var why string
	if r.res, why = splicePlugins(r.prev, r.opts, r.res, r.pluginChanges, r.pluginSecrets); why != "" {
		return why
	}
	r.t.Stats.PartialPlugins++
	return ""
}
