package objgraph

import (
	"slices"
	"sync"
)

// MaxDepth bounds the chain of graphs ReplaceEdgesFrom makes before it squashes them.
var MaxDepth = 32

// ReplaceEdgesFrom returns a graph with g's edges but those out of the nodes from, and
// with's edges instead. g is not modified (it may be read elsewhere): the new graph holds
// what changed and reads the rest through g.
func (g *Graph) ReplaceEdgesFrom(from map[Node]struct{}, with *Graph) *Graph {
	out := &Graph{deps: map[Node]*Set{}, rdeps: map[Node]*Set{}, base: g, depth: g.depth + 1}
	rdepsOf := func(to Node) *Set {
		m, ok := out.rdeps[to]
		if !ok {
			m = g.RdepsOf(to).Clone()
			out.rdeps[to] = m
		}
		return m
	}
	// Only the reverse edges that come or go are written: an object that keeps its
	// references (an Ingress to its IngressClass, which every Ingress refers to) copies none.
	for f := range from {
		now := with.deps[f]
		for to := range g.DepsOf(f).All() {
			if !now.Has(to) {
				rdepsOf(to).Remove(f)
			}
		}
		out.deps[f] = nil // no edges, whatever the base says
	}
	for f, tos := range with.deps {
		_, replaced := from[f]
		before := g.DepsOf(f)
		m := NewSet(tos.Len())
		for to := range tos.All() {
			m.Add(to)
			if !before.Has(to) || !replaced {
				rdepsOf(to).Add(f)
			}
		}
		out.deps[f] = m
	}
	if out.depth > MaxDepth {
		return out.Squash()
	}
	return out
}

// Squash merges the chain of graphs above the bottom one into one, or into a graph without
// base when what changed is a large part of it.
func (g *Graph) Squash() *Graph {
	var chain []*Graph
	bottom := g
	for bottom.base != nil {
		chain = append(chain, bottom)
		bottom = bottom.base
	}
	merged := &Graph{deps: map[Node]*Set{}, rdeps: map[Node]*Set{}, base: bottom, depth: 1}
	for i := len(chain) - 1; i >= 0; i-- {
		for k, v := range chain[i].deps {
			merged.deps[k] = v
		}
		for k, v := range chain[i].rdeps {
			merged.rdeps[k] = v
		}
	}
	if 2*(len(merged.deps)+len(merged.rdeps)) < len(bottom.deps)+len(bottom.rdeps) {
		return merged
	}
	return merged.Flat()
}

// Flat is the graph without base: every Node's edges in its own maps.
func (g *Graph) Flat() *Graph {
	if g.base == nil {
		return g
	}
	out := New()
	var chain []*Graph
	for x := g; x != nil; x = x.base {
		chain = append(chain, x)
	}
	for i := len(chain) - 1; i >= 0; i-- {
		for k, v := range chain[i].deps {
			out.deps[k] = v
		}
		for k, v := range chain[i].rdeps {
			out.rdeps[k] = v
		}
	}
	for k, v := range out.deps {
		if v.Len() == 0 {
			delete(out.deps, k)
		}
	}
	for k, v := range out.rdeps {
		if v.Len() == 0 {
			delete(out.rdeps, k)
		}
	}
	return out
}

// Unite is the graph with every edge of graphs: fresh graphs without base, of one
// translation each, none used after (their maps and sets are taken over or modified). The
// largest takes the others' edges (each edge added costs a map insert: the graphs of the
// parallel translation's groups are about equal, the rest's small), and the two directions
// are united at once on two cores: this runs after the last group's translation ended, on
// the path of the start's first push.
func Unite(graphs []*Graph) *Graph {
	largest := 0
	for i, g := range graphs {
		if len(g.deps)+len(g.rdeps) > len(graphs[largest].deps)+len(graphs[largest].rdeps) {
			largest = i
		}
	}
	into := graphs[largest]
	others := slices.Delete(slices.Clone(graphs), largest, largest+1)
	var wg sync.WaitGroup
	wg.Go(func() {
		for _, other := range others {
			uniteEdges(into.rdeps, other.rdeps)
		}
	})
	for _, other := range others {
		uniteEdges(into.deps, other.deps)
	}
	wg.Wait()
	return into
}

// uniteEdges adds the edges of one direction of a graph (other) to those of another (into);
// other is not used after.
func uniteEdges(into, other map[Node]*Set) {
	for n, set := range other {
		mine, ok := into[n]
		if !ok {
			into[n] = set
			continue
		}
		if mine.Len() < set.Len() { // add the fewer
			mine, set = set, mine
			into[n] = mine
		}
		for m := range set.All() {
			mine.Add(m)
		}
	}
}
