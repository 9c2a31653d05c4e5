package translator

import (
	"testing"

	"github.com/stretchr/testify/require"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Objects of the same age are ordered by "ns/name" as one string, as KIC's store lists
// Ingresses and Gateway API breaks route conflicts; not by namespace, then name.
func TestOlderThanBreaksTiesByNamespaceSlashName(t *testing.T) {
	at := metav1.Unix(1000, 0)
	ing := func(ns, name string) *netv1.Ingress {
		return &netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: at}}
	}
	for _, tc := range []struct{ aNS, aName, bNS, bName string }{
		{"team-a", "y", "team", "x"}, // '-' < '/'
		{"team.a", "y", "team", "x"}, // '.' < '/'
		{"team", "x", "team0", "a"},  // '/' < '0'
		{"team", "x", "teamb", "a"},
		{"a", "z", "b", "a"},
		{"ns", "a", "ns", "b"},
		{"", "z", "a", "a"}, // cluster-scoped: "/z"
	} {
		a, b := ing(tc.aNS, tc.aName), ing(tc.bNS, tc.bName)
		sa, sb := tc.aNS+"/"+tc.aName, tc.bNS+"/"+tc.bName
		require.Less(t, sa, sb, "the case itself")
		require.True(t, olderThan(a, b), "%s before %s", sa, sb)
		require.False(t, olderThan(b, a), "%s after %s", sb, sa)
	}
	older := ing("z", "z")
	older.CreationTimestamp = metav1.Unix(999, 0)
	require.True(t, olderThan(older, ing("a", "a")), "age first")
}
