package translator

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/store"
)

// Fail closed (docs/security.md, item 0): an object that names a plugin konductor cannot
// apply is never served without it. The plugin may be refused (its configuration cannot be
// built or Kong's schema refuses it), missing (no KongPlugin or KongClusterPlugin of that
// name), or in another namespace that no ReferenceGrant opens. Its referrer (an Ingress,
// Service, KongServiceFacade, KongConsumer, KongConsumerGroup, TCPIngress, UDPIngress or
// Gateway API route) is then left out of the snapshot together with every object that
// depends on it, by the object graph: exactly what the fallback configuration leaves out
// when a gateway refuses the plugin (dataplane/fallback.go), so both kinds of refusal give
// the same configuration. A Service left out takes the Ingresses and routes that use it; a
// KongConsumerGroup its consumers (a consumer without its group's plugins is a widening too).
//
// KIC renders the referrer without the plugin (translation-rules.md §12.1: "referenced plugin
// missing: failure on the referrers; no plugin"): a route asking for key-auth would be open to
// everyone. This is one of konductor's deliberate differences (docs/migration-from-kic.md).
//
// A global KongClusterPlugin that is refused has no referrer to leave out; it is reported
// and left out, as in KIC.

// refusal is one referrer whose plugin cannot be applied, and why.
type refusal struct {
	referrer kongstate.ObjectRef
	field    string // where the referrer names the plugin
	// plugin is the refused plugin object; zero when the plugin is missing or not granted.
	plugin kongstate.ObjectRef
	why    string
	// bound: the referrer passes a bound on what one object may become (bounds.go), no plugin.
	bound bool
}

// refuse records that referrer names a plugin it cannot have (attachList).
func (b *builder) refuse(referrer client.Object, gvk schema.GroupVersionKind, field string, plugin kongstate.ObjectRef, format string, args ...any) {
	b.refusals = append(b.refusals, refusal{referrer: kongstate.RefFor(referrer, gvk), field: field, plugin: plugin, why: fmt.Sprintf(format, args...)})
}

// maxFailClosedPasses bounds the translations of one Build. Leaving objects out does not
// make another plugin unresolvable (a plugin and what it reads are never a referrer's
// dependents), so the second pass finds no new refusal; the bound guards the rule, not a
// case known to need it.
const maxFailClosedPasses = 4

// buildFailClosed is build: a translation, then, while referrers of plugins that cannot be
// applied are found, a translation of the snapshot without them and their dependents.
//
// Every pass translates with one Gateway API attachment, that of the whole snapshot (given
// or made here): a route left out still attaches to its listeners (its status says so, and
// its Events why it is not served), as it does while a change does not reach it
// (Incremental). Each pass starts from the RefProblems the routes held before the first,
// and a route left out keeps those the first pass found.
func buildFailClosed(snap *store.Snapshot, opts Options, gw *gatewayapi.Attachment) Result {
	if gw == nil {
		gw = gatewayapi.Attach(GatewayInput(snap, opts))
	}
	before := gw.MarkRefProblems()
	res, refusals := buildOnce(snap, opts, gw)
	if len(refusals) == 0 {
		return res
	}
	first := gw.MarkRefProblems()
	out := newFailedClosed()
	for pass := 1; len(refusals) > 0 && pass < maxFailClosedPasses; pass++ {
		out.add(res, refusals)
		snap = snap.Select(func(gvk schema.GroupVersionKind, obj client.Object) bool {
			r := kongstate.RefFor(obj, gvk)
			if n := objgraph.NodeOf(r); out.has(n) {
				out.refs[n] = r
				return false
			}
			return true
		})
		before.Restore(nil)
		res, refusals = buildOnce(snap, opts, gw)
	}
	first.Restore(func(k gatewayapi.RouteKey) bool { return !out.has(objgraph.NodeOf(routeRef(k))) })
	return out.into(res)
}

// failedClosed is what failing closed left out: each object with the reason, or the object it
// depends on that was left out.
type failedClosed struct {
	order   []objgraph.Node
	because map[objgraph.Node]failedClosedReason
	// refs are the objects left out as the snapshot held them (with UID and version: an
	// Event goes to the object itself); an object the graph names but the snapshot does not
	// hold has none.
	refs map[objgraph.Node]kongstate.ObjectRef
	// plugins are the refused plugins that kept referrers out: their own problems (why they
	// are refused) stay in the result.
	plugins map[objgraph.Node]struct{}
	// passes are the translations that found refusals, first to last: their problems about
	// the objects left out and the edges out of them stay in the result.
	passes []Result
}

type failedClosedReason struct {
	// refusal is the referrer's own, or that of the referrer it depends on through via.
	refusal *refusal
	via     *objgraph.Node // the object left out that it depends on; nil for a referrer
}

func newFailedClosed() *failedClosed {
	return &failedClosed{because: map[objgraph.Node]failedClosedReason{}, refs: map[objgraph.Node]kongstate.ObjectRef{}, plugins: map[objgraph.Node]struct{}{}}
}

func (l *failedClosed) has(n objgraph.Node) bool { _, ok := l.because[n]; return ok }

// add leaves out the referrers of refusals and, by g, everything that depends on them (not
// through a shared value: Graph.Broken), each once, breadth first so that a dependent is
// reported with the nearest object it needs.
func (l *failedClosed) add(pass Result, refusals []refusal) {
	l.passes = append(l.passes, pass)
	g := pass.Graph
	var queue []objgraph.Node
	for i := range refusals {
		r := &refusals[i]
		n := objgraph.NodeOf(r.referrer)
		if r.plugin.Name != "" {
			l.plugins[objgraph.NodeOf(r.plugin)] = struct{}{}
		}
		if l.has(n) {
			continue
		}
		l.because[n] = failedClosedReason{refusal: r}
		l.order = append(l.order, n)
		queue = append(queue, n)
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for d := range g.RdepsOf(n).All() {
			if l.has(d) || d.Shared() {
				continue // a value shared with another object does not take it along (Graph.Broken)
			}
			l.because[d] = failedClosedReason{refusal: l.because[n].refusal, via: &n}
			l.order = append(l.order, d)
			queue = append(queue, d)
		}
	}
}

// into is res, the translation without the objects left out, with what a reader of the
// result needs of them from the passes that left them out: the problems about them and about
// the refused plugins (which the last translation no longer looked up), a problem on each
// saying why it was left out, the edges out of them, and the plugins those passes built.
func (l *failedClosed) into(res Result) Result {
	problems := res.Problems
	for _, pass := range l.passes {
		for _, p := range pass.Problems {
			n := objgraph.NodeOf(p.Object)
			if _, refused := l.plugins[n]; refused || l.has(n) {
				problems = append(problems, p)
			}
		}
	}
	for _, n := range l.order {
		why := l.because[n]
		r := why.refusal
		if why.via == nil {
			msg := "left out with everything that depends on it: " + r.why + "; konductor never serves an object without a plugin it names"
			if r.bound {
				msg = "left out with everything that depends on it: " + r.why
			}
			problems = append(problems, Problem{Object: r.referrer, Field: r.field, Message: msg})
			continue
		}
		obj, ok := l.refs[n]
		if !ok {
			obj = n.Ref()
		}
		// The root reason is repeated: it says whether an object is awaited (the webhook
		// warns then) or refused.
		msg := fmt.Sprintf("left out: it depends on %s, which names a plugin it cannot have: %s", why.via.Ref(), r.why)
		switch {
		case r.bound && *why.via == objgraph.NodeOf(r.referrer):
			msg = fmt.Sprintf("left out: it depends on %s, left out because %s", why.via.Ref(), r.why)
		case r.bound:
			msg = fmt.Sprintf("left out: it depends on %s, left out because %s %s", why.via.Ref(), r.referrer, r.why)
		case *why.via != objgraph.NodeOf(r.referrer):
			msg = fmt.Sprintf("left out: it depends on %s, left out because %s names a plugin it cannot have: %s", why.via.Ref(), r.referrer, r.why)
		}
		problems = append(problems, Problem{Object: obj, Message: msg})
	}
	res.Problems = sortProblems(problems)
	// The result's graph is the last translation's, new: the edges out of the objects left
	// out, and out of what they read, directly or through others, are added to it, so that
	// an event of what they name (the plugin fixed, a grant made, a plugin of a Service only
	// they use removed) wakes a round (Relevance); and a value one of them shared (a Kong
	// service's name an Ingress also asked for) keeps all who shared it, since the object
	// left out will claim it again once back.
	for _, pass := range l.passes {
		copied := map[objgraph.Node]bool{}
		var copyEdges func(n objgraph.Node)
		copyEdges = func(n objgraph.Node) {
			if copied[n] {
				return
			}
			copied[n] = true
			for d := range pass.Graph.DepsOf(n).All() {
				res.Graph.Refer(n.Ref(), d.Ref())
				if !d.Shared() {
					copyEdges(d)
					continue
				}
				for other := range pass.Graph.DepsOf(d).All() {
					res.Graph.Refer(d.Ref(), other.Ref())
					res.Graph.Refer(other.Ref(), d.Ref())
				}
			}
		}
		for _, n := range l.order {
			copyEdges(n)
		}
		// The plugins the pass built, the refused ones among them, stay known to
		// Incremental, with the edges out of them (to the Secrets they read): a change of
		// one is then seen (a refused plugin fixed is a full Build).
		for n, ok := range pass.parts.plugins.read {
			if _, known := res.parts.plugins.read[n]; known {
				continue
			}
			if res.parts.plugins.read == nil {
				res.parts.plugins.read = map[objgraph.Node]bool{}
			}
			res.parts.plugins.read[n] = ok
			for d := range pass.Graph.DepsOf(n).All() {
				res.Graph.Refer(n.Ref(), d.Ref())
			}
		}
	}
	res.parts.leftOut = make(map[objgraph.Node]struct{}, len(l.order))
	for _, n := range l.order {
		res.parts.leftOut[n] = struct{}{}
	}
	return res
}

// LeftOutBecause says whether this translation left obj out to fail closed (a plugin it
// names, or one an object it depends on names, cannot be applied), and why: the problem
// reported on it. A deletion of what obj made is then deliberate (`konductor diff` says so),
// not a loss.
func (r Result) LeftOutBecause(obj kongstate.ObjectRef) (string, bool) {
	if r.parts == nil {
		return "", false
	}
	n := objgraph.NodeOf(obj)
	if _, ok := r.parts.leftOut[n]; !ok {
		return "", false
	}
	for _, p := range r.Problems {
		if objgraph.NodeOf(p.Object) == n && strings.HasPrefix(p.Message, "left out") {
			return p.Message, true
		}
	}
	return "left out to fail closed", true
}
