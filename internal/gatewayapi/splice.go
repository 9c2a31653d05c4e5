package gatewayapi

import (
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// What the translator's Incremental needs to re-translate some routes only (issue #13): the
// attachment of the new snapshot made from the previous one, whose routes' RefProblems
// (added by translation) stay those of the previous translation for the routes it does not
// re-translate, and a view of it that holds only the routes it does.

// RouteAttachments are the attached routes of a, sorted by kind, namespace and name.
func (a *Attachment) RouteAttachments() []*RouteAttachment {
	if a == nil {
		return nil
	}
	out := make([]*RouteAttachment, 0, len(a.routes))
	for _, ra := range a.routes {
		out = append(out, ra)
	}
	slices.SortFunc(out, func(x, y *RouteAttachment) int {
		return compareKeys(keyOf(x), keyOf(y))
	})
	return out
}

func keyOf(ra *RouteAttachment) routeKey {
	return routeKey{ra.Route.Kind, ra.Route.Object.GetNamespace(), ra.Route.Object.GetName()}
}

func compareKeys(a, b routeKey) int {
	if c := strings.Compare(a.kind, b.kind); c != 0 {
		return c
	}
	if c := strings.Compare(a.namespace, b.namespace); c != 0 {
		return c
	}
	return strings.Compare(a.name, b.name)
}

// Reattach is Attach of the input a was made from with the routes of kind named changed
// replaced by in.Routes (the new versions of those that still exist; in's other fields but
// NamespaceLabels are not read: the classes, Gateways and Namespace labels must be a's),
// made from a without going through the other routes: their RouteAttachments, a's
// Gateways and listeners are shared with a (read-only). ok is false when a changed route
// attaches to other listeners than before (the listeners' attachedRoutes change): Attach
// of the whole input is needed then. The changed routes' RouteAttachments are new, without
// RefProblems.
func (a *Attachment) Reattach(in Input, kind string, changed []types.NamespacedName) (out *Attachment, ok bool) {
	out = &Attachment{Classes: a.Classes, Gateways: a.Gateways, routes: maps.Clone(a.routes)}
	fresh := make(map[routeKey]*RouteAttachment, len(in.Routes))
	for _, r := range in.Routes {
		if r.Object == nil || r.Kind != kind {
			return nil, false
		}
		ra := a.attachRoute(r, in.NamespaceLabels)
		if ra != nil {
			fresh[routeKey{kind, r.Object.GetNamespace(), r.Object.GetName()}] = ra
		}
	}
	for _, k := range changed {
		key := routeKey{kind, k.Namespace, k.Name}
		ra, old := fresh[key], a.routes[key]
		if !slices.Equal(listenersOf(ra), listenersOf(old)) {
			return nil, false
		}
		delete(out.routes, key)
		if ra != nil {
			out.routes[key] = ra
		}
	}
	return out, true
}

// listenersOf are the listeners ra attaches to, in the order Attach counts them, without
// repeats.
func listenersOf(ra *RouteAttachment) []*Listener {
	if ra == nil {
		return nil
	}
	var out []*Listener
	for _, p := range ra.Parents {
		for _, l := range p.Listeners {
			if !slices.Contains(out, l) {
				out = append(out, l)
			}
		}
	}
	return out
}

// RoutesOnly is a view of a that holds only the routes of kind named keys, the same
// RouteAttachments (what translation adds to them is added to a's), a's classes, and no
// Gateways: a translation given it translates those routes and nothing of the Gateways
// themselves (their certificates, their references).
func (a *Attachment) RoutesOnly(kind string, keys []types.NamespacedName) *Attachment {
	out := &Attachment{Classes: a.Classes, routes: make(map[routeKey]*RouteAttachment, len(keys))}
	for _, k := range keys {
		key := routeKey{kind, k.Namespace, k.Name}
		if ra := a.routes[key]; ra != nil {
			out.routes[key] = ra
		}
	}
	return out
}

// TakeRefProblems gives every route of a that fresh does not say (kind, namespace, name) the
// RefProblems of the same route in from, as they were (nil stays nil). a's routes must not
// have been translated yet but for the fresh ones.
func (a *Attachment) TakeRefProblems(from *Attachment, fresh func(kind, namespace, name string) bool) {
	for k, ra := range a.routes {
		if fresh(k.kind, k.namespace, k.name) {
			continue
		}
		if old := from.routes[k]; old != nil {
			ra.RefProblems = slices.Clip(old.RefProblems)
		}
	}
}
