package manager

import (
	"context"
	"errors"
	"testing"

	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/store"
)

// /readyz: not ready until the cache synced; then a standby is ready (warm, able to take
// over), while the leader is ready only once its first sync succeeded.
func TestReadiness(t *testing.T) {
	inf, barrier := serviceBarrier(t)
	elected := make(chan struct{})
	loopErr := errors.New("first sync to Kong not completed")
	check := readiness(barrier, elected, func() error { return loopErr }, nil)

	require.ErrorContains(t, check(nil), "cache not synced: waiting for *v1.Service")
	inf.Synced()
	require.NoError(t, check(nil), "a standby with a synced cache is ready")
	close(elected)
	require.ErrorContains(t, check(nil), "first sync")
	loopErr = nil
	require.NoError(t, check(nil))
}

// With Konnect licensing, the leader is ready only once it holds a license (as KIC's); a
// standby does not wait for it.
func TestReadinessWaitsForTheKonnectLicense(t *testing.T) {
	inf, barrier := serviceBarrier(t)
	inf.Synced()
	elected := make(chan struct{})
	var license *kong.License
	check := readiness(barrier, elected, func() error { return nil }, func() *kong.License { return license })

	require.NoError(t, check(nil), "a standby")
	close(elected)
	require.ErrorContains(t, check(nil), "no Konnect license available")
	license = &kong.License{ID: kong.String("l1"), Payload: kong.String("{}")}
	require.NoError(t, check(nil))
}

// serviceBarrier is a barrier over one fake Service informer, not synced yet.
func serviceBarrier(t *testing.T) (*controllertest.FakeInformer, *dataplane.InformerBarrier) {
	inf := controllertest.NewFakeInformer()
	fi := &informertest.FakeInformers{Scheme: store.NewScheme(), InformersByGVK: map[schema.GroupVersionKind]toolscache.SharedIndexInformer{
		corev1.SchemeGroupVersion.WithKind("Service"): inf,
	}}
	barrier, err := dataplane.NewInformerBarrier(context.Background(), fi, &corev1.Service{})
	require.NoError(t, err)
	return inf, barrier
}
