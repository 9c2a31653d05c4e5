package store

import (
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Scheme is one scheme, built once, that knows every kind the store reads.
func TestSchemeIsSharedAndKnowsEveryKind(t *testing.T) {
	require.Same(t, Scheme(), Scheme())
	for _, k := range AllKinds() {
		gvk, err := apiutil.GVKForObject(k.NewObject(), Scheme())
		require.NoError(t, err, k.String())
		require.Equal(t, k.GroupVersionKind(), gvk, k.String())
	}
}

// BenchmarkNewScheme is what building the process's scheme costs (manager.New builds it in a
// goroutine while the API server answers: docs/performance/journal.md, Start).
func BenchmarkNewScheme(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		NewScheme()
	}
}
