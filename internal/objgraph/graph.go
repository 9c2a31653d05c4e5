package objgraph

import (
	"iter"
	"maps"
	"sort"
	intern "unique"

	"github.com/konductor/konductor/internal/kongstate"
)

// Graph is the object graph of ARCHITECTURE.md ("Growing the translator"): every reference
// between Kubernetes objects that one translation followed, recorded once as an edge from the
// object that refers to the object it refers to (an Ingress to its Service, a KongConsumer to
// its credential Secret, a KongPlugin to the Secret of its configFrom, ...). References to
// objects that do not exist are edges too: creating that object changes the translation.
//
// Nodes are keyed by group, kind, namespace and name (no UID, no version), so a reference
// made by name meets the object it names.
type Graph struct {
	deps  map[Node]*Set // object -> what it refers to
	rdeps map[Node]*Set // object -> what refers to it
	// base, when set, holds the edges of the nodes that deps and rdeps do not mention: an
	// Incremental round's graph is the previous one with the edges of the objects it
	// translated again replaced (ReplaceEdgesFrom), so that a round copies no more than it
	// changes. depth is the length of that chain.
	base  *Graph
	depth int
}

// Node is a graph Node: what Key keeps of an ObjectRef, in 40 bytes instead of 96 (the
// group and kind are one handle; Version and UID, always empty in the graph, are left out).
// At 10,000 Ingresses the graph holds about 50,000 of them (issue #13, memory).
type Node struct {
	kind            intern.Handle[groupKind]
	namespace, name string
}

// groupKind is a Node's group and kind, interned by package unique (imported as intern: a
// test helper of this package is named unique): the handle of a kind that no graph names any
// more is collected, so kinds users write in references do not accumulate.
type groupKind struct{ group, kind string }

// NodeOf is the node of ref in the graph (Key(ref)).
func NodeOf(ref kongstate.ObjectRef) Node {
	return Node{kind: intern.Make(groupKind{ref.Group, ref.Kind}), namespace: ref.Namespace, name: ref.Name}
}

// Ref is the node as Key gives it.
func (n Node) Ref() kongstate.ObjectRef {
	gk := n.kind.Value()
	return kongstate.ObjectRef{Group: gk.group, Kind: gk.kind, Namespace: n.namespace, Name: n.name}
}

func (n Node) String() string { return n.Ref().String() }

// GroupKind is n's group and kind.
func (n Node) GroupKind() (group, kind string) {
	gk := n.kind.Value()
	return gk.group, gk.kind
}

// Namespace is n's namespace ("" for a cluster-scoped object).
func (n Node) Namespace() string { return n.namespace }

// Name is n's name.
func (n Node) Name() string { return n.name }

// isKind reports whether n is an object of group and kind.
func (n Node) IsKind(group, kind string) bool {
	gk := n.kind.Value()
	return gk.group == group && gk.kind == kind
}

// shared reports whether n is a shared value's Node (SharedValue).
func (n Node) Shared() bool { return n.IsKind(sharedValueGroup, "SharedValue") }

// depsOf is what n refers to (read-only).
func (g *Graph) DepsOf(n Node) *Set {
	for x := g; x != nil; x = x.base {
		if m, ok := x.deps[n]; ok {
			return m
		}
	}
	return nil
}

// rdepsOf is what refers to n (read-only).
func (g *Graph) RdepsOf(n Node) *Set {
	for x := g; x != nil; x = x.base {
		if m, ok := x.rdeps[n]; ok {
			return m
		}
	}
	return nil
}

func New() *Graph {
	return &Graph{deps: map[Node]*Set{}, rdeps: map[Node]*Set{}}
}

// sharedValueGroup is the group of shared values' nodes (SharedValue): no Kubernetes
// object's.
const sharedValueGroup = "graph.konductor.internal"

// SharedValue is the graph Node of a value several objects make or read together: one Kong
// keeps unique that two objects claim (a route's name, a host's certificate; contend), or
// one made from all of them (the expressions router's priorities of every HTTPRoute). Each
// of them refers to the Node and the Node to each, so that a change of any reaches the
// others (Dependents); a broken one does not break the others (Broken).
func SharedValue(name string) kongstate.ObjectRef {
	return kongstate.ObjectRef{Group: sharedValueGroup, Kind: "SharedValue", Name: name}
}

// Key is the key of ref in the graph: its group, kind, namespace and name.
func Key(ref kongstate.ObjectRef) kongstate.ObjectRef {
	return kongstate.ObjectRef{Group: ref.Group, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}
}

// Refer records that from refers to to.
func (g *Graph) Refer(fromRef, toRef kongstate.ObjectRef) {
	from, to := NodeOf(fromRef), NodeOf(toRef)
	if from == to {
		return
	}
	deps := g.deps[from]
	if deps == nil {
		deps = NewSet(1)
		g.deps[from] = deps
	}
	deps.Add(to)
	rdeps := g.rdeps[to]
	if rdeps == nil {
		rdeps = NewSet(1)
		g.rdeps[to] = rdeps
	}
	rdeps.Add(from)
}

// Edges yields the nodes that refer to others with what they refer to, those g's own layer
// holds: all of them for a graph without base (Flat, and every graph one translation
// builds). The sets are g's: read-only.
func (g *Graph) Edges() iter.Seq2[Node, *Set] { return maps.All(g.deps) }

// Referred yields the nodes that others refer to, those g's own layer holds (as Edges).
func (g *Graph) Referred() iter.Seq[Node] { return maps.Keys(g.rdeps) }

// Only is a graph holding g's edges out of the nodes keep accepts (g's own layer, as Edges),
// for ReplaceEdgesFrom's with: the edges in one direction only, sharing g's sets.
func (g *Graph) Only(keep func(Node) bool) *Graph {
	out := New()
	for from, tos := range g.deps {
		if keep(from) {
			out.deps[from] = tos
		}
	}
	return out
}

// References lists the objects ref refers to, sorted.
func (g *Graph) References(ref kongstate.ObjectRef) []kongstate.ObjectRef {
	if g == nil {
		return nil
	}
	return sortedRefs(g.DepsOf(NodeOf(ref)).All())
}

// ReferredBy lists the objects that refer to ref, sorted.
func (g *Graph) ReferredBy(ref kongstate.ObjectRef) []kongstate.ObjectRef {
	if g == nil {
		return nil
	}
	return sortedRefs(g.RdepsOf(NodeOf(ref)).All())
}

// Dependents lists refs and every object that refers to one of them, directly or through
// others, shared values included (the objects a change of refs can affect), sorted.
func (g *Graph) Dependents(refs ...kongstate.ObjectRef) []kongstate.ObjectRef {
	return g.dependents(refs, true)
}

// Broken lists refs and every object that refers to one of them, directly or through others,
// but not through a value they share (SharedValue): the objects that must go when refs go.
// A route left out for its name does not go with the route that has the name, nor an
// HTTPRoute with another whose priorities its own are ordered against. Sorted, without
// shared values.
func (g *Graph) Broken(refs ...kongstate.ObjectRef) []kongstate.ObjectRef {
	return g.dependents(refs, false)
}

func (g *Graph) dependents(refs []kongstate.ObjectRef, shared bool) []kongstate.ObjectRef {
	seen := map[Node]struct{}{}
	queue := make([]Node, 0, len(refs))
	for _, r := range refs {
		queue = append(queue, NodeOf(r))
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if _, ok := seen[n]; ok {
			continue
		}
		if !shared && n.Shared() {
			continue
		}
		seen[n] = struct{}{}
		if g != nil {
			for d := range g.RdepsOf(n).All() {
				queue = append(queue, d)
			}
		}
	}
	return sortedRefs(maps.Keys(seen))
}

func sortedRefs(set iter.Seq[Node]) []kongstate.ObjectRef {
	var out []kongstate.ObjectRef
	for n := range set {
		out = append(out, n.Ref())
	}
	sort.Slice(out, func(i, j int) bool { return RefLess(out[i], out[j]) })
	return out
}

// RefLess orders references by kind, namespace, name and group, as the graph lists them.
func RefLess(a, b kongstate.ObjectRef) bool {
	if a.Kind != b.Kind {
		return a.Kind < b.Kind
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	return a.Group < b.Group
}
