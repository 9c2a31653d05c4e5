package translator

import (
	"iter"
	"slices"
)

// refSet is a set of graph nodes, the edges of one node. Most nodes have one or two (an
// Ingress refers to its Service and IngressClass, a Service is referred to by its Ingress):
// a Go map's first group of slots costs about 850 bytes with ObjectRef keys, so a node's
// edges are a slice while they are few, and a map only past fewSize (an IngressClass that
// every Ingress refers to). At 10,000 Ingresses maps of one entry were 30 MB of the
// controller's live heap.
//
// A refSet held by a Graph is never modified once that graph is built: replaceEdgesFrom
// copies the ones it changes (clone).
type refSet = smallSet[node]

// smallSet is a set kept as a slice while it holds at most fewSize members, as a map
// beyond: refSet, and the Incremental translator's Ingresses that name each Service.
type smallSet[T comparable] struct {
	few  []T
	many map[T]struct{}
}

// fewSize is the largest set kept as a slice: a lookup compares at most this many refs.
const fewSize = 8

// newRefSet is an empty set for about n nodes.
func newRefSet(n int) *refSet { return newSmallSet[node](n) }

// newSmallSet is an empty set for about n members.
func newSmallSet[T comparable](n int) *smallSet[T] {
	if n > fewSize {
		return &smallSet[T]{many: make(map[T]struct{}, n)}
	}
	return &smallSet[T]{few: make([]T, 0, n)}
}

// Len is the number of nodes in s (0 for nil).
func (s *smallSet[T]) Len() int {
	switch {
	case s == nil:
		return 0
	case s.many != nil:
		return len(s.many)
	default:
		return len(s.few)
	}
}

// Has says whether n is in s.
func (s *smallSet[T]) Has(n T) bool {
	switch {
	case s == nil:
		return false
	case s.many != nil:
		_, ok := s.many[n]
		return ok
	default:
		return slices.Contains(s.few, n)
	}
}

// Add puts n in s.
func (s *smallSet[T]) Add(n T) {
	switch {
	case s.many != nil:
		s.many[n] = struct{}{}
	case slices.Contains(s.few, n):
	case len(s.few) < fewSize:
		s.few = append(s.few, n)
	default:
		s.many = make(map[T]struct{}, 2*fewSize)
		for _, r := range s.few {
			s.many[r] = struct{}{}
		}
		s.many[n] = struct{}{}
		s.few = nil
	}
}

// Remove takes n out of s. A map stays a map: sets that shrink are rare.
func (s *smallSet[T]) Remove(n T) {
	if s.many != nil {
		delete(s.many, n)
		return
	}
	if i := slices.Index(s.few, n); i >= 0 {
		s.few = slices.Delete(s.few, i, i+1)
	}
}

// All is every node of s, in no particular order.
func (s *smallSet[T]) All() iter.Seq[T] {
	return func(yield func(T) bool) {
		if s == nil {
			return
		}
		if s.many != nil {
			for n := range s.many {
				if !yield(n) {
					return
				}
			}
			return
		}
		for _, n := range s.few {
			if !yield(n) {
				return
			}
		}
	}
}

// clone is a copy of s with room for one more node.
func (s *smallSet[T]) clone() *smallSet[T] {
	out := newSmallSet[T](s.Len() + 1)
	for n := range s.All() {
		out.Add(n)
	}
	return out
}
