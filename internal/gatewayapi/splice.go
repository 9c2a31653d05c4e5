package gatewayapi

import (
	"maps"
	"slices"
	"strings"
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

func keyOf(ra *RouteAttachment) RouteKey {
	return RouteKey{ra.Route.Kind, ra.Route.Object.GetNamespace(), ra.Route.Object.GetName()}
}

func compareKeys(a, b RouteKey) int {
	if c := strings.Compare(a.Kind, b.Kind); c != 0 {
		return c
	}
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// Reattach is Attach of the input a was made from with the routes named changed (of any
// kinds) replaced by in.Routes (the new versions of those that still exist; in's other
// fields but NamespaceLabels are not read: the classes, Gateways and Namespace labels must be
// a's), made from a without going through the other routes: their RouteAttachments, a's
// Gateways and listeners are shared with a (read-only). ok is false when a changed route
// attaches to other listeners than before (the listeners' attachedRoutes change), or when
// in.Routes holds a route changed does not name: Attach of the whole input is needed then.
// The changed routes' RouteAttachments are new, without RefProblems.
func (a *Attachment) Reattach(in Input, changed []RouteKey) (out *Attachment, ok bool) {
	out = &Attachment{Classes: a.Classes, Gateways: a.Gateways, ListenerSets: a.ListenerSets, routes: maps.Clone(a.routes)}
	named := make(map[RouteKey]bool, len(changed))
	for _, k := range changed {
		named[k] = true
	}
	fresh := make(map[RouteKey]*RouteAttachment, len(in.Routes))
	for _, r := range in.Routes {
		if r.Object == nil {
			return nil, false
		}
		k := RouteKey{r.Kind, r.Object.GetNamespace(), r.Object.GetName()}
		if !named[k] {
			return nil, false
		}
		if ra := a.attachRoute(r, in.NamespaceLabels); ra != nil {
			fresh[k] = ra
		}
	}
	for _, k := range changed {
		ra, old := fresh[k], a.routes[k]
		if !slices.Equal(listenersOf(ra), listenersOf(old)) {
			return nil, false
		}
		delete(out.routes, k)
		if ra != nil {
			out.routes[k] = ra
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

// RoutesOnly is a view of a that holds only the routes named keys, the same
// RouteAttachments (what translation adds to them is added to a's), a's classes, and no
// Gateways: a translation given it translates those routes and nothing of the Gateways
// themselves (their certificates, their references).
func (a *Attachment) RoutesOnly(keys []RouteKey) *Attachment {
	out := &Attachment{Classes: a.Classes, routes: make(map[RouteKey]*RouteAttachment, len(keys))}
	for _, k := range keys {
		if ra := a.routes[k]; ra != nil {
			out.routes[k] = ra
		}
	}
	return out
}

// TakeRefProblems gives every route of a that fresh does not say the
// RefProblems of the same route in from, as they were (nil stays nil). a's routes must not
// have been translated yet but for the fresh ones.
func (a *Attachment) TakeRefProblems(from *Attachment, fresh func(RouteKey) bool) {
	for k, ra := range a.routes {
		if fresh(k) {
			continue
		}
		if old := from.routes[k]; old != nil {
			ra.RefProblems = slices.Clip(old.RefProblems)
		}
	}
}

// RefProblemsMark is what the routes of an attachment held in RefProblems at one point
// (MarkRefProblems), to translate them again from there.
type RefProblemsMark map[*RouteAttachment][]RefProblem

// MarkRefProblems records what a's routes hold in RefProblems now.
func (a *Attachment) MarkRefProblems() RefProblemsMark {
	m := make(RefProblemsMark, len(a.routes))
	for _, ra := range a.routes {
		m[ra] = slices.Clip(ra.RefProblems)
	}
	return m
}

// Restore gives every route of the mark the RefProblems it held then: a translation of the
// same routes again adds its own (a translation that left objects out and made again,
// translator/kong_plugins_failclosed.go). keep, when it says so for a route, keeps what it holds now.
func (m RefProblemsMark) Restore(keep func(RouteKey) bool) {
	for ra, problems := range m {
		if keep != nil && keep(keyOf(ra)) {
			continue
		}
		ra.RefProblems = problems
	}
}
