package objgraph

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/kongstate"
)

// TestRefSetActsAsAMap: random adds and removes across the slice-to-map threshold give what a
// map gives, the zero Node (kept apart from the set's first member) included, and a clone is
// independent of its original.
func TestRefSetActsAsAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	nodeAt := func(i int) Node {
		if i == 0 {
			return Node{}
		}
		return NodeOf(kongstate.ObjectRef{Kind: "Ingress", Namespace: "ns", Name: fmt.Sprintf("n%d", i)})
	}
	for round := 0; round < 200; round++ {
		s, model := NewSet(rng.IntN(3*fewSize)), map[Node]struct{}{}
		for step := 0; step < 60; step++ {
			n := nodeAt(rng.IntN(3 * fewSize))
			if rng.IntN(3) == 0 {
				s.Remove(n)
				delete(model, n)
			} else {
				s.Add(n)
				model[n] = struct{}{}
			}
			require.Equal(t, len(model), s.Len())
			for i := 0; i < 3*fewSize; i++ {
				_, want := model[nodeAt(i)]
				require.Equal(t, want, s.Has(nodeAt(i)), "Node %d", i)
			}
			got := slices.Collect(s.All())
			require.ElementsMatch(t, slices.Collect(maps.Keys(model)), got, "All yields each member once")
			c := s.Clone()
			require.ElementsMatch(t, got, slices.Collect(c.All()), "a clone has the same members")
			c.Add(nodeAt(1000))
			require.False(t, s.Has(nodeAt(1000)), "a clone's add reaches the original")
			require.Equal(t, s.Len()+1, c.Len())
			for _, n := range got[:min(len(got), 2)] {
				c.Remove(n)
				require.True(t, s.Has(n), "a clone's removal reaches the original")
			}
		}
	}
	var none *Set
	require.Zero(t, none.Len())
	require.False(t, none.Has(nodeAt(0)))
	require.Empty(t, slices.Collect(none.All()))
	require.Zero(t, none.Clone().Len())
}

// TestSmallSetKeepsOrderWhileFew: while a set is few, All yields its members in the order
// they were added, whichever were removed (as the slice it was did).
func TestSmallSetKeepsOrderWhileFew(t *testing.T) {
	s := NewSmallSet[string](1)
	for _, m := range []string{"a", "b", "c", "d"} {
		s.Add(m)
	}
	s.Remove("a")
	s.Add("e")
	s.Remove("c")
	require.Equal(t, []string{"b", "d", "e"}, slices.Collect(s.All()))
	require.Equal(t, []string{"b", "d", "e", "f"}, slices.Collect(func() *SmallSet[string] { c := s.Clone(); c.Add("f"); return c }().All()))
}
