package manager

import (
	"context"
	"errors"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/konductor/konductor/internal/store"
)

// A kind whose watch fails is dropped only when discovery says its CRD is gone: not when
// discovery itself fails (the API server away), not when discovery still serves it.
func TestOptionalKindIsNotDroppedOnATransientError(t *testing.T) {
	for name, served := range map[string]func(store.Kind) (string, error){
		"discovery fails": func(store.Kind) (string, error) { return "", errors.New("connection refused") },
		"still served":    func(store.Kind) (string, error) { return "v1", nil },
	} {
		t.Run(name, func(t *testing.T) {
			live := store.NewLiveKinds(store.NewKindSet(store.KindKongConsumer))
			rounds := 0
			// No cache and no barrier: neither may be touched.
			o := newOptionalKinds(nil, nil, live, served, func() { rounds++ }, nil, logr.Discard())
			_ = o.reconcile(context.Background(), store.KindKongConsumer)
			require.True(t, live.Has(store.KindKongConsumer))
			require.Zero(t, rounds)
		})
	}
}

// Only a NotFound of an optional kind asks discovery; a forbidden list or another kind's
// failure does not.
func TestOptionalKindsWatchFailedAsksOnNotFoundOnly(t *testing.T) {
	o := newOptionalKinds(nil, nil, store.NewLiveKinds(nil), nil, func() {}, nil, logr.Discard())
	gr := schema.GroupResource{Group: "configuration.konghq.com", Resource: "kongconsumers"}
	o.watchFailed("*v1.KongConsumer", apierrors.NewForbidden(gr, "", errors.New("no")))
	o.watchFailed("*v1.Ingress", apierrors.NewNotFound(gr, ""))
	require.Zero(t, o.queue.Len())
	o.watchFailed("*v1.KongConsumer", apierrors.NewNotFound(gr, ""))
	require.Equal(t, 1, o.queue.Len())
	k, _ := o.queue.Get()
	require.Equal(t, store.KindKongConsumer, k)
}

// A CRD that exists but whose kind discovery does not serve yet (just created, not
// established) is asked about again: reconcile says so instead of settling.
func TestOptionalKindPresentButNotServedIsRetried(t *testing.T) {
	o := newOptionalKinds(nil, nil, store.NewLiveKinds(nil), func(store.Kind) (string, error) { return "", nil }, func() {}, nil, logr.Discard())
	require.NoError(t, o.reconcile(context.Background(), store.KindKongConsumer), "no CRD: nothing to do")
	o.present[crdName(store.KindKongConsumer)] = true
	require.ErrorIs(t, o.reconcile(context.Background(), store.KindKongConsumer), errNotServedYet)
}
