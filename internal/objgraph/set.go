package objgraph

import (
	"iter"
	"slices"
)

// Set is a set of graph nodes, the edges of one Node. Most nodes have one or two (an
// Ingress refers to its Service and IngressClass, a Service is referred to by its Ingress):
// a Go map's first group of slots costs about 850 bytes with ObjectRef keys, so a Node's
// edges are a slice while they are few, and a map only past fewSize (an IngressClass that
// every Ingress refers to). At 10,000 Ingresses maps of one entry were 30 MB of the
// controller's live heap.
//
// A Set held by a Graph is never modified once that graph is built: ReplaceEdgesFrom
// copies the ones it changes (Clone).
type Set = SmallSet[Node]

// SmallSet is a set that holds its first member in itself and the others in a smallSetMore:
// Set, and the Incremental translator's Ingresses that name each Service and
// EndpointSlices of each Service. Most of them hold one member, and kept by pointer in maps
// of thousands they are the controller's state between rounds: a set of one Node is one
// 48-byte allocation, where a slice beside the set's header took a second one (80 bytes in
// all).
type SmallSet[T comparable] struct {
	// one is a member, unless it is T's zero value (a zero member is kept in more).
	// Members are yielded one first, then more's in their order, which is the order they
	// were added in while they are few: a removed one is replaced by more's first.
	one  T
	more *smallSetMore[T]
}

// smallSetMore is a SmallSet's members beyond one: a slice while they are at most fewSize,
// a map beyond.
type smallSetMore[T comparable] struct {
	few  []T
	many map[T]struct{}
}

// fewSize is the largest number of members kept in a slice: a lookup compares at most this
// many (and one).
const fewSize = 8

// newRefSet is an empty set for about n nodes.
func NewSet(n int) *Set { return NewSmallSet[Node](n) }

// newSmallSet is an empty set for about n members.
func NewSmallSet[T comparable](n int) *SmallSet[T] {
	switch {
	case n > fewSize+1:
		return &SmallSet[T]{more: &smallSetMore[T]{many: make(map[T]struct{}, n-1)}}
	case n > 1:
		return &SmallSet[T]{more: &smallSetMore[T]{few: make([]T, 0, n-1)}}
	}
	return &SmallSet[T]{}
}

// Len is the number of members of s (0 for nil).
func (s *SmallSet[T]) Len() int {
	if s == nil {
		return 0
	}
	n := s.more.len()
	var zero T
	if s.one != zero {
		n++
	}
	return n
}

func (m *smallSetMore[T]) len() int {
	switch {
	case m == nil:
		return 0
	case m.many != nil:
		return len(m.many)
	default:
		return len(m.few)
	}
}

// Has says whether n is in s.
func (s *SmallSet[T]) Has(n T) bool {
	if s == nil {
		return false
	}
	var zero T
	if n != zero && s.one == n {
		return true
	}
	return s.more.has(n)
}

func (m *smallSetMore[T]) has(n T) bool {
	switch {
	case m == nil:
		return false
	case m.many != nil:
		_, ok := m.many[n]
		return ok
	default:
		return slices.Contains(m.few, n)
	}
}

// Add puts n in s.
func (s *SmallSet[T]) Add(n T) {
	var zero T
	switch {
	case s.Has(n):
	case s.one == zero && n != zero && s.more.len() == 0:
		s.one = n
	default:
		if s.more == nil {
			s.more = &smallSetMore[T]{}
		}
		s.more.add(n)
	}
}

func (m *smallSetMore[T]) add(n T) {
	switch {
	case m.many != nil:
		m.many[n] = struct{}{}
	case len(m.few) < fewSize:
		m.few = append(m.few, n)
	default:
		m.many = make(map[T]struct{}, 2*fewSize)
		for _, r := range m.few {
			m.many[r] = struct{}{}
		}
		m.many[n] = struct{}{}
		m.few = nil
	}
}

// Remove takes n out of s. A map stays a map: sets that shrink are rare.
func (s *SmallSet[T]) Remove(n T) {
	var zero T
	if n == zero || s.one != n {
		s.more.remove(n)
		return
	}
	s.one = zero
	if m := s.more; m != nil && m.many == nil && len(m.few) > 0 && m.few[0] != zero {
		s.one = m.few[0]
		m.few = slices.Delete(m.few, 0, 1)
	}
}

func (m *smallSetMore[T]) remove(n T) {
	switch {
	case m == nil:
	case m.many != nil:
		delete(m.many, n)
	default:
		if i := slices.Index(m.few, n); i >= 0 {
			m.few = slices.Delete(m.few, i, i+1)
		}
	}
}

// All is every member of s: in the order added while s is small, in no particular order once
// it holds them in a map. Callers must not rely on either (they sort, or use sets).
func (s *SmallSet[T]) All() iter.Seq[T] {
	return func(yield func(T) bool) {
		if s == nil {
			return
		}
		var zero T
		if s.one != zero && !yield(s.one) {
			return
		}
		if m := s.more; m != nil && m.many != nil {
			for n := range m.many {
				if !yield(n) {
					return
				}
			}
		} else if m != nil {
			for _, n := range m.few {
				if !yield(n) {
					return
				}
			}
		}
	}
}

// clone is a copy of s, sized to it: a clone made to remove a member, kept in the graph, holds
// no room it does not use (one allocation for a set of one); Add makes room when needed.
func (s *SmallSet[T]) Clone() *SmallSet[T] {
	out := NewSmallSet[T](s.Len())
	for n := range s.All() {
		out.Add(n)
	}
	return out
}
