package store

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Kinds switched off (KIC's --enable-controller-*=false) are not read, required ones too;
// without IngressClass the class is not looked up, so it is not the default class (KIC's
// DisableIngressClassLookups); Gateway limits the Gateways read to one (--gateway-to-reconcile).
func TestSnapshotLeavesOffKindsAndOtherGateways(t *testing.T) {
	class := &netv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "kong",
		Annotations: map[string]string{netv1.AnnotationIsDefaultIngressClass: "true"}}}
	unclassed := &netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "unclassed"}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "svc"}}
	gw := func(name string) client.Object {
		return &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name}}
	}
	reader := fake.NewClientBuilder().WithScheme(NewScheme()).WithObjects(class, unclassed, svc, gw("kong"), gw("other")).Build()
	all := NewKindSet(AllKinds()...)

	snap, err := New(reader, Options{Kinds: all}).Snapshot(context.Background())
	require.NoError(t, err)
	require.True(t, snap.IngressClassIsDefault)
	require.Len(t, snap.Ingresses, 1, "the default class takes the unclassed Ingress")
	require.Len(t, snap.Services, 1)
	require.Len(t, snap.Gateways, 2)

	snap, err = New(reader, Options{Kinds: all, Off: NewKindSet(KindIngressClass, KindService),
		Gateway: &types.NamespacedName{Namespace: "a", Name: "kong"}}).Snapshot(context.Background())
	require.NoError(t, err)
	require.False(t, snap.IngressClassIsDefault, "the class is not looked up")
	require.Empty(t, snap.Ingresses)
	require.Empty(t, snap.Services, "a required kind switched off is not read")
	require.Len(t, snap.Gateways, 1)
	require.Equal(t, "kong", snap.Gateways[0].Name)
}
