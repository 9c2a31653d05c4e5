package store

import (
	"context"
	"testing"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// A store with a live set reads the kinds of the set as it is when a snapshot starts: a kind
// that joins is read from the next snapshot on, one that leaves is not read any more.
func TestSnapshotReadsTheLiveKinds(t *testing.T) {
	consumer := &kongv1.KongConsumer{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "alice",
		Annotations: map[string]string{"kubernetes.io/ingress.class": "kong"}}, Username: "alice"}
	reader := fake.NewClientBuilder().WithScheme(NewScheme()).WithObjects(consumer).Build()
	live := NewLiveKinds(nil)
	s := New(reader, Options{Kinds: NewKindSet(KindKongConsumer), Live: live})

	snap, err := s.Snapshot(context.Background())
	require.NoError(t, err)
	require.Empty(t, snap.KongConsumers, "Live replaces Kinds")

	live.Add(KindKongConsumer)
	snap, err = s.Snapshot(context.Background())
	require.NoError(t, err)
	require.Len(t, snap.KongConsumers, 1)

	live.Remove(KindKongConsumer)
	snap, err = s.Snapshot(context.Background())
	require.NoError(t, err)
	require.Empty(t, snap.KongConsumers)
}

// One snapshot reads one set: a set handed out does not change when a kind joins or leaves.
func TestLiveKindsHandsOutSetsThatDoNotChange(t *testing.T) {
	live := NewLiveKinds(NewKindSet(KindKongPlugin))
	before := live.Load()
	live.Add(KindKongConsumer)
	live.Remove(KindKongPlugin)
	require.True(t, before.Has(KindKongPlugin))
	require.False(t, before.Has(KindKongConsumer))
	require.True(t, live.Has(KindKongConsumer))
	require.False(t, live.Has(KindKongPlugin))
}
