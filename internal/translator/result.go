package translator

import (
	"slices"
	"strings"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	netv1 "k8s.io/api/networking/v1"

	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/objgraph"
)

// What a Result holds beyond its state, problems and graph, for the layers above translation
// (Incremental, the parallel first translation) to read: its Kong services as parts, each
// with the objects whose routes it holds, and the notes translation takes of what it read
// and met that the graph does not say (which consumer usernames custom entities looked up,
// which plugin objects resolved, where each plugin entity came from, which certificates
// several Secrets made...). Translation writes them as it goes; it never reads them back and
// knows nothing of what they serve: TestTranslationKnowsNothingAbove holds the sources to
// the declarations of the translation's own files.

// resultParts are a Result's Kong services as parts and the notes its translation took.
type resultParts struct {
	services        []servicePart // Kong services with routes, by name
	nameTaken       bool
	readClock       bool
	readRustRegexes bool // the result depends on Options.RustRegexes
	consumers       consumerParts
	plugins         pluginParts
	certificates    certificateParts
	// leftOut are the objects left out because a plugin they name (or need) could not be
	// applied (failclosed.go), nil when none: a round that changes one of them, or whose
	// partial translation leaves anything out, is a full Build.
	leftOut map[objgraph.Node]struct{}
	// danglingForeignKey: a KongCustomEntity's fields name a service, route or consumer the
	// configuration does not hold (customEntityForeignKeysOwn): any round may make it, so
	// every round is a full Build while one does.
	danglingForeignKey bool
}

// servicePart is one Kong service of a result, with its upstream and the Ingresses whose
// routes it holds.
type servicePart struct {
	name     string
	svc      *file.FService
	upstream *file.FUpstream
	owners   []*netv1.Ingress
	// other are the sources of its routes that are not Ingresses: nil for most parts, which
	// the Incremental translator keeps one of per Kong service (issue #13, memory).
	other *otherRouteSources
}

// otherRouteSources are the sources of a Kong service's routes other than Ingresses.
type otherRouteSources struct {
	routes  []gatewayapi.RouteKey // the Gateway API routes whose routes it holds
	foreign bool                  // it holds routes of other sources than Ingresses and Gateway API routes
}

// routes are the Gateway API routes whose routes p holds.
func (p *servicePart) routes() []gatewayapi.RouteKey {
	if p.other == nil {
		return nil
	}
	return p.other.routes
}

// foreign: p holds routes of other sources than Ingresses and Gateway API routes.
func (p *servicePart) foreign() bool { return p.other != nil && p.other.foreign }

// addRouteOwner records the source of r, a route of no Ingress.
func (p *servicePart) addRouteOwner(r *routeEntry) {
	if p.other == nil {
		p.other = &otherRouteSources{}
	}
	o := p.other
	kind, ok := routeKindOf(r.srcGVK)
	if !ok || r.src == nil {
		o.foreign = true
		return
	}
	k := gatewayapi.RouteKey{Kind: kind, Namespace: r.src.GetNamespace(), Name: r.src.GetName()}
	if len(o.routes) == 0 || o.routes[len(o.routes)-1] != k {
		o.routes = append(o.routes, k)
	}
}

// withServices is base (the entities other than Kong services and upstreams) with the Kong
// services and upstreams of parts (sorted by name), as Build leaves them: nil when none. Build,
// the splice and the parallel build assemble their State with it.
//
// An upstream is named after its Kong service's host, and Kong services of different names can
// share a host: a TCPIngress's default.dns.53 (tcp) and a UDPIngress's default.dns.53.udp (udp)
// both go to dns.default.53.svc, as does an Ingress's default.dns.53. Kong refuses two upstreams
// of one name, so each name is kept once, from the first part (by service name) that has it,
// as KIC's getUpstreams keeps the first it meets (docs/kong-facts.md, KIC 13). The parts keep
// their own upstreams, so the next one of a name takes its place when the first goes.
func withServices(base *kongstate.State, parts []servicePart) *kongstate.State {
	state := *base
	state.Services, state.Upstreams = nil, nil
	upstreams := 0
	for _, p := range parts {
		if p.upstream != nil {
			upstreams++
		}
	}
	if len(parts) > 0 {
		state.Services = make([]*file.FService, 0, len(parts))
	}
	if upstreams > 0 {
		state.Upstreams = make([]*file.FUpstream, 0, upstreams)
	}
	for _, p := range parts {
		state.Services = append(state.Services, p.svc)
		if p.upstream != nil && !upstreamTakenByTwin(parts, p) {
			state.Upstreams = append(state.Upstreams, p.upstream)
		}
	}
	return &state
}

// upstreamTakenByTwin says whether p's upstream name is already that of the part before it by
// name. Only one pair of Kong service names shares a host: a UDPIngress's <ns>.<svc>.<port>.udp
// and the <ns>.<svc>.<port> of a TCPIngress or an Ingress (l4.go), which sorts first; every
// other host follows from its service's name one to one. Looking the twin up by name instead
// of keeping a set of every upstream name spares each splice a hash per upstream (a quarter of
// a splice's CPU at 10,000 Ingresses).
func upstreamTakenByTwin(parts []servicePart, p servicePart) bool {
	twin, ok := strings.CutSuffix(p.name, ".udp")
	if !ok {
		return false
	}
	i := partIndex(parts, twin)
	return i < len(parts) && parts[i].name == twin && parts[i].upstream != nil &&
		kong.StringValue(parts[i].upstream.Name) == kong.StringValue(p.upstream.Name)
}

// certificateParts is what a Build adds to its Result for Incremental about certificates
// (tls): the Secrets tls read for one certificate each (not a listener's pair), with the
// hosts each won, who named it and its place in the order certificates are made in; the place
// in that order of the Secret that made each of State.Certificates; and the certificates
// several Secrets of one pair made.
type certificateParts struct {
	secrets map[nsName]*tlsSecret
	order   []int
	shared  map[*file.FCertificate]struct{}
}

// recordCertificates records tls's Secrets (order) and where each certificate stands
// (certOrder) for spliceCertificates.
func (b *builder) recordCertificates(order []*tlsSecret, certOrder []int) {
	c := &b.parts.certificates
	c.order = certOrder
	for _, ts := range order {
		if ts.alt == "" {
			if c.secrets == nil {
				c.secrets = make(map[nsName]*tlsSecret, len(order))
			}
			c.secrets[nsName{ts.namespace, ts.name}] = ts
		}
	}
}

// pluginParts is what a Build adds to its Result for Incremental about plugins: where each of
// State.Plugins comes from, and which KongPlugins and KongClusterPlugins translation built a
// configuration of (pluginSource: looked up by a konghq.com/plugins annotation or an
// ExtensionRef, or global), with whether it resolved (true) or was left out (a problem).
type pluginParts struct {
	origins []pluginOrigin // of each of State.Plugins, in its order
	read    map[objgraph.Node]bool
	// dups are the plugins of an entity left out because another plugin of its name (or the
	// same plugin through another name) was attached to the same entities, and of that
	// other: which one wins depends on their sources' order, which spliceIngressPlugins then
	// does not vouch for.
	dups map[objgraph.Node]struct{}
}

// pluginOrigin is the plugin object one plugin entity was made of, and which of that object's
// pluginSources made it: plugins() resolves a plugin once per namespace and name it is named
// by (a KongClusterPlugin named from two namespaces is two), each with its own record of the
// instance names given (pluginEntity), so an entity is made again with a fresh record per
// source, in the entities' order. The entities of one source are contiguous (a block), and
// the blocks are in the order their sources were first referred to (first).
type pluginOrigin struct {
	obj    objgraph.Node
	source string // the pluginSource's key ("ns:name" it was looked up by); "" when global
	global bool
	// first is where the source was first referred to; by is the Ingress whose route the
	// entity is attached to (nil: none).
	first pluginFirst
	by    *netv1.Ingress
}

// pluginFirst is where plugins() first met a plugin source: its phase and, in the Ingresses'
// phase, the Ingress (phases are in plugins()' order: the Ingresses are met in sortByAge's
// order, and one Ingress's plugins in the order its annotation lists them).
type pluginFirst struct {
	phase   int8
	ingress *netv1.Ingress
}

const (
	phaseGatewayRoutes int8 = iota
	phaseIngresses
	phaseOthers // TCPIngresses, UDPIngresses, Services, consumers, consumer groups
	phaseGlobal
)

func (pp *pluginParts) noteDup(a, b objgraph.Node) {
	if pp.dups == nil {
		pp.dups = map[objgraph.Node]struct{}{}
	}
	pp.dups[a], pp.dups[b] = struct{}{}, struct{}{}
}

func (pp *pluginParts) noteRead(obj kongstate.ObjectRef, resolved bool) {
	if pp.read == nil {
		pp.read = map[objgraph.Node]bool{}
	}
	pp.read[objgraph.NodeOf(obj)] = resolved
}

// consumerParts is what a Build adds to its Result for Incremental about consumers: the
// KongConsumer of each of State.Consumers (in its order), whether a credential conflict
// left consumers out, and the usernames custom entities looked consumers up by.
type consumerParts struct {
	objs     []*kongv1.KongConsumer
	conflict bool
	// contested are the usernames and custom_ids (as values: one identity space) that several
	// KongConsumers claim, of which the younger were left out (consumerNameTaken).
	contested map[string]struct{}
	// lookedUp are the usernames consumerIDOf was asked for, found or not: a custom entity
	// attached to a consumer takes the ID of the consumer of that username or custom_id
	// (any KongConsumer, with no edge in the graph: a look-up that found none has no object
	// to point to).
	lookedUp map[string]struct{}
}

// partIndex is the position of the first of parts (sorted by name) whose name is not below
// name.
func partIndex(parts []servicePart, name string) int {
	i, _ := slices.BinarySearchFunc(parts, name, func(p servicePart, name string) int { return strings.Compare(p.name, name) })
	return i
}
