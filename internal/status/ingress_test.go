package status

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	kongv1beta1 "github.com/kong/kubernetes-configuration/api/configuration/v1beta1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/store"
)

func servedIngress(name, class string) *netv1.Ingress {
	return &netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: netv1.IngressSpec{IngressClassName: &class}}
}

func TestIngressStatusFollowsPublishedAddresses(t *testing.T) {
	proxy := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kong", Name: "proxy"},
		Spec:       corev1.ServiceSpec{ClusterIP: "10.0.0.7"},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{
			{Hostname: "lb.example.com"}, {IP: "203.0.113.5"},
		}}},
	}
	objs := []client.Object{servedIngress("mine", "kong"), servedIngress("other", "nginx"), proxy}
	var patches atomic.Int32
	c := fake.NewClientBuilder().WithScheme(store.NewScheme()).WithObjects(objs...).
		WithStatusSubresource(&netv1.Ingress{}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			patches.Add(1)
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		}}).Build()
	s := store.New(c, store.Options{})

	for _, tc := range []struct {
		name string
		opts IngressOptions
		want []netv1.IngressLoadBalancerIngress
	}{
		{"load balancer of the publish service", IngressOptions{PublishService: "kong/proxy"},
			[]netv1.IngressLoadBalancerIngress{{IP: "203.0.113.5"}, {Hostname: "lb.example.com"}}},
		{"explicit addresses win", IngressOptions{PublishService: "kong/proxy", PublishAddresses: []string{"kong.example.com", "192.0.2.1"}},
			[]netv1.IngressLoadBalancerIngress{{IP: "192.0.2.1"}, {Hostname: "kong.example.com"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := NewIngressUpdater(tc.opts, s, c, c, logr.Discard())
			require.True(t, u.Enabled())
			before := patches.Load()
			require.NoError(t, u.Update(context.Background()))
			require.Equal(t, before+1, patches.Load(), "one served Ingress, one write")

			var got netv1.Ingress
			require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "mine"}, &got))
			require.Equal(t, tc.want, got.Status.LoadBalancer.Ingress)
			require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "other"}, &got))
			require.Empty(t, got.Status.LoadBalancer.Ingress, "an Ingress of another class is not ours to write")

			require.NoError(t, u.Update(context.Background()))
			require.Equal(t, before+1, patches.Load(), "an Ingress whose status is right is not written again")
		})
	}
}

func TestIngressStatusClusterIPFallbackAndErrors(t *testing.T) {
	proxy := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "kong", Name: "proxy"}, Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.7"}}
	c := fake.NewClientBuilder().WithScheme(store.NewScheme()).WithObjects(servedIngress("mine", "kong"), proxy).
		WithStatusSubresource(&netv1.Ingress{}).Build()
	u := NewIngressUpdater(IngressOptions{PublishService: "kong/proxy"}, store.New(c, store.Options{}), c, c, logr.Discard())
	require.NoError(t, u.Update(context.Background()))
	var got netv1.Ingress
	require.NoError(t, c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "mine"}, &got))
	require.Equal(t, []netv1.IngressLoadBalancerIngress{{IP: "10.0.0.7"}}, got.Status.LoadBalancer.Ingress)

	missing := NewIngressUpdater(IngressOptions{PublishService: "kong/absent"}, store.New(c, store.Options{}), c, c, logr.Discard())
	require.ErrorContains(t, missing.Update(context.Background()), "--publish-service kong/absent")
	require.False(t, NewIngressUpdater(IngressOptions{}, nil, nil, nil, logr.Discard()).Enabled())
}

func TestIngressUpdaterRunsOnlyAfterAGatewaySynced(t *testing.T) {
	u := NewIngressUpdater(IngressOptions{PublishAddresses: []string{"192.0.2.1"}}, nil, nil, nil, logr.Discard())
	u.Report(context.Background(), dataplane.Round{Gateways: []dataplane.GatewayResult{{URL: "a", Skipped: true}}})
	select {
	case <-u.trigger.C():
		t.Fatal("a round that reached no gateway must not publish addresses")
	default:
	}
	u.Report(context.Background(), dataplane.Round{Gateways: []dataplane.GatewayResult{{URL: "a", Err: &dataplane.RejectedError{}}}})
	select {
	case <-u.trigger.C():
		t.Fatal("a configuration refused whole must not publish addresses")
	default:
	}
	u.Report(context.Background(), dataplane.Round{Gateways: []dataplane.GatewayResult{{URL: "a", Err: &dataplane.RejectedError{},
		Fallback: &dataplane.FallbackResult{Err: &dataplane.RejectedError{}}}}})
	select {
	case <-u.trigger.C():
		t.Fatal("a fallback configuration refused too must not publish addresses")
	default:
	}
	u.Report(context.Background(), dataplane.Round{Gateways: []dataplane.GatewayResult{{URL: "a", Err: &dataplane.RejectedError{},
		Fallback: &dataplane.FallbackResult{}}}})
	select {
	case <-u.trigger.C():
	default:
		t.Fatal("a fallback configuration taken asks for a status update")
	}
	for _, err := range []error{nil, &dataplane.RejectedError{RestApplied: true}} {
		u.Report(context.Background(), dataplane.Round{Gateways: []dataplane.GatewayResult{{URL: "a", Err: err}}})
		select {
		case <-u.trigger.C():
		default:
			t.Fatalf("a round that applied the configuration (err %v) asks for a status update", err)
		}
	}
}

func classedAnnotations(class string) map[string]string {
	return map[string]string{store.IngressClassAnnotation: class}
}

// TCPIngresses and UDPIngresses of our class get the Ingresses' addresses, in their core/v1
// shape; those of another class are left alone; a right status is not written again.
func TestStreamIngressStatusFollowsPublishedAddresses(t *testing.T) {
	meta := func(name, class string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "default", Name: name, Annotations: classedAnnotations(class)}
	}
	objs := []client.Object{
		&kongv1beta1.TCPIngress{ObjectMeta: meta("tcp", "kong")}, &kongv1beta1.TCPIngress{ObjectMeta: meta("tcp-other", "nginx")},
		&kongv1beta1.UDPIngress{ObjectMeta: meta("udp", "kong")}, &kongv1beta1.UDPIngress{ObjectMeta: meta("udp-other", "nginx")},
	}
	var patches atomic.Int32
	c := fake.NewClientBuilder().WithScheme(store.NewScheme()).WithObjects(objs...).
		WithStatusSubresource(&kongv1beta1.TCPIngress{}, &kongv1beta1.UDPIngress{}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			patches.Add(1)
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		}}).Build()
	s := store.New(c, store.Options{Kinds: store.NewKindSet(store.KindTCPIngress, store.KindUDPIngress)})
	u := NewIngressUpdater(IngressOptions{PublishAddresses: []string{"kong.example.com", "192.0.2.1"}}, s, c, c, logr.Discard())
	ctx := context.Background()
	require.NoError(t, u.Update(ctx))
	require.Equal(t, int32(2), patches.Load(), "one TCPIngress and one UDPIngress of our class")

	want := []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}, {Hostname: "kong.example.com"}}
	var tcp kongv1beta1.TCPIngress
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "tcp"}, &tcp))
	require.Equal(t, want, tcp.Status.LoadBalancer.Ingress)
	var udp kongv1beta1.UDPIngress
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "udp"}, &udp))
	require.Equal(t, want, udp.Status.LoadBalancer.Ingress)
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "tcp-other"}, &tcp))
	require.Empty(t, tcp.Status.LoadBalancer.Ingress, "another class's TCPIngress is not ours to write")
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "udp-other"}, &udp))
	require.Empty(t, udp.Status.LoadBalancer.Ingress, "another class's UDPIngress is not ours to write")

	require.NoError(t, u.Update(ctx))
	require.Equal(t, int32(2), patches.Load(), "a right status is not written again")
}

// KIC's --publish-status-address-udp and --publish-service-udp: UDPIngresses get the UDP
// proxy's addresses, TCPIngresses keep the proxy's; Gateways get both (publishedAddresses).
func TestUDPIngressStatusTakesTheUDPAddresses(t *testing.T) {
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "default", Name: name, Annotations: classedAnnotations("kong")}
	}
	udpSvc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "kong", Name: "udp-proxy"},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "198.51.100.8"}}}}}
	c := fake.NewClientBuilder().WithScheme(store.NewScheme()).
		WithObjects(&kongv1beta1.TCPIngress{ObjectMeta: meta("tcp")}, &kongv1beta1.UDPIngress{ObjectMeta: meta("udp")}, udpSvc).
		WithStatusSubresource(&kongv1beta1.TCPIngress{}, &kongv1beta1.UDPIngress{}).Build()
	s := store.New(c, store.Options{Kinds: store.NewKindSet(store.KindTCPIngress, store.KindUDPIngress)})
	ctx := context.Background()
	for _, tc := range []struct {
		opts IngressOptions
		udp  string
	}{
		{IngressOptions{PublishAddresses: []string{"192.0.2.1"}, PublishAddressesUDP: []string{"198.51.100.7"}}, "198.51.100.7"},
		{IngressOptions{PublishAddresses: []string{"192.0.2.1"}, PublishServiceUDP: "kong/udp-proxy"}, "198.51.100.8"},
	} {
		opts := tc.opts
		require.NoError(t, NewIngressUpdater(opts, s, c, c, logr.Discard()).Update(ctx))
		var tcp kongv1beta1.TCPIngress
		require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "tcp"}, &tcp))
		require.Equal(t, []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}, tcp.Status.LoadBalancer.Ingress)
		var udp kongv1beta1.UDPIngress
		require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "udp"}, &udp))
		require.Equal(t, []corev1.LoadBalancerIngress{{IP: tc.udp}}, udp.Status.LoadBalancer.Ingress, "%+v", opts)
		addrs, err := publishedAddresses(ctx, opts, c)
		require.NoError(t, err)
		require.Equal(t, []string{"192.0.2.1", tc.udp}, addrs, "a Gateway's addresses: both proxies'")
	}
}

// After a gateway took a configuration without refused objects (a fallback configuration, or
// in database mode all but them), the objects in it get their addresses and the refused ones,
// and those left out with them, do not: Kong routes nothing of theirs. A gateway that took
// the configuration whole holds them all.
func TestIngressStatusLeavesOutWhatKongDoesNotHold(t *testing.T) {
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "default", Name: name, Annotations: classedAnnotations("kong")}
	}
	objs := []client.Object{
		servedIngress("ok", "kong"), servedIngress("refused", "kong"), servedIngress("dependent", "kong"), servedIngress("backfilled", "kong"),
		&kongv1beta1.TCPIngress{ObjectMeta: meta("tcp-refused")}, &kongv1beta1.UDPIngress{ObjectMeta: meta("udp-ok")},
	}
	written := map[string]int{}
	var mu sync.Mutex
	c := fake.NewClientBuilder().WithScheme(store.NewScheme()).WithObjects(objs...).
		WithStatusSubresource(&netv1.Ingress{}, &kongv1beta1.TCPIngress{}, &kongv1beta1.UDPIngress{}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			mu.Lock()
			written[obj.GetName()]++
			mu.Unlock()
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		}}).Build()
	s := store.New(c, store.Options{Kinds: store.NewKindSet(store.KindIngress, store.KindTCPIngress, store.KindUDPIngress)})
	u := NewIngressUpdater(IngressOptions{PublishAddresses: []string{"192.0.2.1"}}, s, c, c, logr.Discard())
	ctx := context.Background()
	ref := func(gvk schema.GroupVersionKind, name string) kongstate.ObjectRef {
		return kongstate.ObjectRef{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: "default", Name: name, UID: "u"}
	}
	refusedIng, tcp := ref(gvkIngress, "refused"), ref(gvkTCPIngress, "tcp-refused")
	fallback := dataplane.GatewayResult{URL: "a", Protocol: dataplane.ProtocolDBLess,
		Err: &dataplane.RejectedError{Entities: []dataplane.EntityError{{Object: refusedIng}, {Object: tcp}}},
		Fallback: &dataplane.FallbackResult{
			Broken:     []kongstate.ObjectRef{refusedIng, tcp},
			Excluded:   []kongstate.ObjectRef{ref(gvkIngress, "backfilled"), ref(gvkIngress, "dependent"), refusedIng, tcp},
			Backfilled: []kongstate.ObjectRef{ref(gvkIngress, "backfilled")},
		}}
	u.Report(ctx, dataplane.Round{Gateways: []dataplane.GatewayResult{fallback}})
	require.NoError(t, u.Update(ctx))
	require.Equal(t, map[string]int{"ok": 1, "backfilled": 1, "udp-ok": 1}, written,
		"the objects in the fallback configuration (one taken from the last valid one included), not those left out")

	// Database mode: the gateway applied all but the refused entities and those isolated with them.
	clear(written)
	u.Report(ctx, dataplane.Round{Gateways: []dataplane.GatewayResult{{URL: "db",
		Err: &dataplane.RejectedError{RestApplied: true, Entities: []dataplane.EntityError{{Object: refusedIng}}, Excluded: []kongstate.ObjectRef{ref(gvkIngress, "dependent")}}}}})
	require.NoError(t, u.Update(ctx))
	require.Equal(t, map[string]int{"tcp-refused": 1}, written, "all but the refused and isolated objects")

	// A second gateway took the configuration whole: every object is routed somewhere.
	clear(written)
	u.Report(ctx, dataplane.Round{Gateways: []dataplane.GatewayResult{fallback, {URL: "b"}}})
	require.NoError(t, u.Update(ctx))
	require.Equal(t, map[string]int{"refused": 1, "dependent": 1}, written)
}
