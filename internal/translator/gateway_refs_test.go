package translator

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/konductor/konductor/internal/store"
)

// A Namespace's label change wakes translation only while a Gateway admits routes by
// namespace Selector; other Namespace updates never do.
func TestNamespaceRelevance(t *testing.T) {
	ns := func(labels map[string]string) *metav1.PartialObjectMetadata {
		o := store.NamespaceMetadata()
		o.Name, o.Labels, o.ResourceVersion = "team-b", labels, "1"
		return o
	}
	plain, labelled := ns(nil), ns(map[string]string{"gateway-access": "true"})

	var withSelector Relevance
	withSelector.SetGraph(buildCase(t, "gateway-namespace-selector").Graph)
	require.True(t, withSelector.Relevant(plain, labelled), "a label added may attach routes")
	require.True(t, withSelector.Relevant(labelled, plain), "a label removed may detach routes")
	require.True(t, withSelector.Relevant(nil, labelled), "a new namespace")
	annotated := ns(nil)
	annotated.Annotations = map[string]string{"a": "b"}
	require.False(t, withSelector.Relevant(plain, annotated), "labels unchanged")

	var without Relevance
	without.SetGraph(buildCase(t, "httproute-basic").Graph)
	require.False(t, without.Relevant(plain, labelled), "no Gateway reads namespace labels")
	require.False(t, without.Relevant(nil, labelled))
}
