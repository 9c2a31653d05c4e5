package status

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/store"
)

// The updater writes what differs and nothing else, Programmed only once a gateway took the
// configuration, and a route's entry written by another controller between the cache's copy
// and our write survives: the write conflicts, the route is read again, ours is recomputed.
func TestGatewayAPIUpdater(t *testing.T) {
	ctx := context.Background()
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "kong"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: ours}}
	theirs := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "theirs"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: "example.com/other"}}
	gw := testGateway(listener("http", gatewayv1.HTTPProtocolType, 80, ""))
	web := testRoute("default", "web", nil, parentRef("kong", ""))
	late := gatewayv1.RouteParentStatus{ParentRef: parentRef("their-gateway", ""), ControllerName: "example.com/other",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: metav1.NewTime(t0)}}}

	var patches, conflicts atomic.Int32
	var c client.Client
	c = fake.NewClientBuilder().WithScheme(store.NewScheme()).WithObjects(class, theirs, gw, web).
		WithStatusSubresource(&gatewayv1.GatewayClass{}, &gatewayv1.Gateway{}, &gatewayv1.HTTPRoute{}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			patches.Add(1)
			if hr, ok := obj.(*gatewayv1.HTTPRoute); ok && conflicts.Load() == 0 {
				// Another controller writes its entry just before ours lands.
				var cur gatewayv1.HTTPRoute
				require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(hr), &cur))
				cur.Status.Parents = append(cur.Status.Parents, late)
				require.NoError(t, cl.Status().Update(ctx, &cur))
				err := cl.SubResource(sub).Patch(ctx, obj, p, opts...)
				require.Error(t, err, "the write carries the resourceVersion it read")
				conflicts.Add(1)
				return err
			}
			return cl.SubResource(sub).Patch(ctx, obj, p, opts...)
		}}).Build()
	u := NewGatewayAPIUpdater("", IngressOptions{PublishAddresses: []string{"192.0.2.1"}}, store.New(c, store.Options{Kinds: store.NewKindSet(store.AllKinds()...)}), c, c, logr.Discard())
	u.now = func() time.Time { return t0 }

	require.NoError(t, u.Update(ctx))
	require.Zero(t, patches.Load(), "nothing is written before a translation was reported")

	u.Report(ctx, dataplane.Round{GatewayAPI: attach(gw, web)})
	require.NoError(t, u.Update(ctx))
	require.EqualValues(t, 1, conflicts.Load())

	var gotClass, gotTheirs gatewayv1.GatewayClass
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(class), &gotClass))
	require.Equal(t, "True/Accepted", condition(gotClass.Status.Conditions, "Accepted"))
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(theirs), &gotTheirs))
	require.Empty(t, gotTheirs.Status.Conditions, "another controller's class is not ours to write")
	var gotGW gatewayv1.Gateway
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(gw), &gotGW))
	require.Equal(t, "False/Pending", condition(gotGW.Status.Conditions, "Programmed"), "no gateway took the configuration yet")
	require.Equal(t, "192.0.2.1", gotGW.Status.Addresses[0].Value)
	require.EqualValues(t, 1, gotGW.Status.Listeners[0].AttachedRoutes)
	var gotWeb gatewayv1.HTTPRoute
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(web), &gotWeb))
	require.Len(t, gotWeb.Status.Parents, 2)
	require.True(t, equality.Semantic.DeepEqual(late, gotWeb.Status.Parents[0]), "the entry written meanwhile survives, unchanged")
	require.Equal(t, ours, string(gotWeb.Status.Parents[1].ControllerName))

	before := patches.Load()
	require.NoError(t, u.Update(ctx))
	require.Equal(t, before, patches.Load(), "nothing differs: nothing is written")

	u.Report(ctx, dataplane.Round{Gateways: []dataplane.GatewayResult{{URL: "a", Skipped: true}}})
	require.NoError(t, u.Update(ctx))
	require.Equal(t, before, patches.Load(), "a round that reached no gateway programs nothing")

	u.Report(ctx, dataplane.Round{Gateways: []dataplane.GatewayResult{{URL: "a", Stale: true}}})
	require.NoError(t, u.Update(ctx))
	require.Equal(t, before, patches.Load(), "a sync of an older translation does not program this one")

	u.Report(ctx, dataplane.Round{Gateways: []dataplane.GatewayResult{{URL: "a", Err: &dataplane.RejectedError{}}}})
	require.NoError(t, u.Update(ctx))
	require.Equal(t, before, patches.Load(), "a configuration refused whole programs nothing")

	// A fallback configuration (without an object Kong refused) is what the gateway serves.
	u.Report(ctx, dataplane.Round{Gateways: []dataplane.GatewayResult{{URL: "a", Err: &dataplane.RejectedError{}, Fallback: &dataplane.FallbackResult{}}}})
	require.NoError(t, u.Update(ctx))
	require.Equal(t, before+1, patches.Load(), "only the Gateway changes")
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(gw), &gotGW))
	require.Equal(t, "True/Programmed", condition(gotGW.Status.Conditions, "Programmed"))
	require.Equal(t, "True/Programmed", condition(gotGW.Status.Listeners[0].Conditions, "Programmed"))
}

// A Gateway's attachedRoutes is written while the route statuses of an earlier translation
// are still being written: with a thousand routes those are seconds of writes, and the
// Gateway's count must not wait behind them.
func TestGatewayAPIUpdaterGatewaysDoNotWaitForRoutes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "kong"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: ours}}
	gw := testGateway(listener("http", gatewayv1.HTTPProtocolType, 80, ""))
	web := testRoute("default", "web", nil, parentRef("kong", ""))
	api := testRoute("default", "api", nil, parentRef("kong", ""))
	routeWriting, release := make(chan struct{}, 1), make(chan struct{})
	c := fake.NewClientBuilder().WithScheme(store.NewScheme()).WithObjects(class, gw, web, api).
		WithStatusSubresource(&gatewayv1.Gateway{}, &gatewayv1.HTTPRoute{}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			if _, isRoute := obj.(*gatewayv1.HTTPRoute); isRoute {
				select { // a route write that takes until the test releases it
				case routeWriting <- struct{}{}:
				default:
				}
				<-release
			}
			return cl.SubResource(sub).Patch(ctx, obj, p, opts...)
		}}).Build()
	u := NewGatewayAPIUpdater("", IngressOptions{}, store.New(c, store.Options{Kinds: store.NewKindSet(store.AllKinds()...)}), c, c, logr.Discard())
	done := make(chan error, 1)
	go func() { done <- u.Start(ctx) }()
	defer func() {
		close(release)
		cancel()
		require.NoError(t, <-done)
	}()

	attached := func() int32 {
		var g gatewayv1.Gateway
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(gw), &g))
		if len(g.Status.Listeners) == 0 {
			return -1
		}
		return g.Status.Listeners[0].AttachedRoutes
	}
	u.Report(ctx, dataplane.Round{GatewayAPI: attach(gw, web, api)})
	<-routeWriting
	require.Eventually(t, func() bool { return attached() == 2 }, 10*time.Second, 5*time.Millisecond)

	// api leaves the Gateway while the first route write still hangs.
	require.NoError(t, c.Delete(ctx, api))
	u.Report(ctx, dataplane.Round{GatewayAPI: attach(gw, web)})
	require.Eventually(t, func() bool { return attached() == 1 }, 10*time.Second, 5*time.Millisecond,
		"the Gateway's count is written while a route write of the earlier translation hangs")
}

// Route statuses are written several at a time: each write waits for the API server's
// answer, and one at a time a thousand of them took minutes on a loaded server.
func TestGatewayAPIUpdaterWritesRoutesConcurrently(t *testing.T) {
	ctx := context.Background()
	gw := testGateway(listener("http", gatewayv1.HTTPProtocolType, 80, ""))
	web := testRoute("default", "web", nil, parentRef("kong", ""))
	api := testRoute("default", "api", nil, parentRef("kong", ""))
	var inFlight atomic.Int32
	bothArrived := make(chan struct{})
	c := fake.NewClientBuilder().WithScheme(store.NewScheme()).WithObjects(gw, web, api).
		WithStatusSubresource(&gatewayv1.Gateway{}, &gatewayv1.HTTPRoute{}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			if _, isRoute := obj.(*gatewayv1.HTTPRoute); isRoute {
				if inFlight.Add(1) == 2 {
					close(bothArrived)
				}
				select { // each route write answers once the other one is in flight too
				case <-bothArrived:
				case <-time.After(10 * time.Second):
					return errors.New("the other route's write never came while this one was in flight")
				}
			}
			return cl.SubResource(sub).Patch(ctx, obj, p, opts...)
		}}).Build()
	u := NewGatewayAPIUpdater("", IngressOptions{}, store.New(c, store.Options{Kinds: store.NewKindSet(store.AllKinds()...)}), c, c, logr.Discard())
	u.Report(ctx, dataplane.Round{GatewayAPI: attach(gw, web, api)})
	require.NoError(t, u.Update(ctx))
	for _, hr := range []*gatewayv1.HTTPRoute{web, api} {
		var got gatewayv1.HTTPRoute
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(hr), &got))
		require.Len(t, got.Status.Parents, 1, hr.Name)
	}
}

// A listener's attachedRoutes follows the cache: a route created or deleted is counted by
// the next pass of the Gateways' loop, which the route's event asks for, with no new
// translation reported; a status write (the generation does not move) asks for nothing.
func TestGatewayAPIUpdaterAttachedRoutesFollowTheCache(t *testing.T) {
	ctx := context.Background()
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "kong"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: ours}}
	gw := testGateway(listener("http", gatewayv1.HTTPProtocolType, 80, ""))
	web := testRoute("default", "web", nil, parentRef("kong", ""))
	api := testRoute("default", "api", nil, parentRef("kong", ""))
	c := fake.NewClientBuilder().WithScheme(store.NewScheme()).WithObjects(class, gw, web).
		WithStatusSubresource(&gatewayv1.GatewayClass{}, &gatewayv1.Gateway{}, &gatewayv1.HTTPRoute{}).Build()
	u := NewGatewayAPIUpdater("", IngressOptions{}, store.New(c, store.Options{Kinds: store.NewKindSet(store.AllKinds()...)}), c, c, logr.Discard())
	attached := func() int32 {
		var g gatewayv1.Gateway
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(gw), &g))
		require.Len(t, g.Status.Listeners, 1)
		return g.Status.Listeners[0].AttachedRoutes
	}
	requested := func() bool {
		select {
		case <-u.trigger.C():
			return true
		default:
			return false
		}
	}
	events := u.EventHandler()

	u.Report(ctx, dataplane.Round{GatewayAPI: attach(gw, web)})
	require.True(t, requested())
	require.NoError(t, u.updateGateways(ctx))
	require.EqualValues(t, 1, attached())

	require.NoError(t, c.Create(ctx, api))
	events.OnAdd(api, false)
	require.True(t, requested(), "a route created asks for a pass")
	require.NoError(t, u.updateGateways(ctx))
	require.EqualValues(t, 2, attached(), "counted from the cache, before any translation has it")

	written := api.DeepCopy()
	written.Status.Parents = []gatewayv1.RouteParentStatus{{ParentRef: parentRef("kong", ""), ControllerName: ours}}
	events.OnUpdate(api, written)
	require.False(t, requested(), "a status write asks for nothing")
	moved := api.DeepCopy()
	moved.Generation++
	events.OnUpdate(api, moved)
	require.True(t, requested(), "a spec change asks for a pass")

	require.NoError(t, c.Delete(ctx, web))
	events.OnDelete(web)
	require.True(t, requested(), "a route deleted asks for a pass")
	require.NoError(t, u.updateGateways(ctx))
	require.EqualValues(t, 1, attached())

	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "echo"}}
	events.OnAdd(svc, false)
	require.False(t, requested(), "a Service does not change attachment")

	// A pass that starts right after a write compares with a cache that may not show that
	// write yet: a count written as 6 while the cache still reads 5 is not written again when
	// the next pass wants 5 (a route added, then deleted). The write's own event, once the
	// cache has it, must ask for a pass that looks again.
	var cached gatewayv1.Gateway
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(gw), &cached))
	statusWritten := cached.DeepCopy()
	statusWritten.Status.Listeners[0].AttachedRoutes++
	events.OnUpdate(&cached, statusWritten)
	require.True(t, requested(), "a Gateway's status written asks for a pass")
	events.OnUpdate(&cached, cached.DeepCopy())
	require.False(t, requested(), "a Gateway resynced unchanged asks for nothing")
}

// BenchmarkGatewayAPIUpdaterAttach is the work a classes-and-Gateways pass adds to read
// attachment from the cache: attachment of 1,000 HTTPRoutes on one listener (the issue's
// measure). Run: go test -run '^$' -bench BenchmarkGatewayAPIUpdaterAttach ./internal/status/
func BenchmarkGatewayAPIUpdaterAttach(b *testing.B) {
	snap := &store.Snapshot{
		GatewayClasses: []*gatewayv1.GatewayClass{{ObjectMeta: metav1.ObjectMeta{Name: "kong"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: ours}}},
		Gateways:       []*gatewayv1.Gateway{testGateway(listener("http", gatewayv1.HTTPProtocolType, 80, ""))},
	}
	for i := range 1000 {
		snap.HTTPRoutes = append(snap.HTTPRoutes, testRoute("default", fmt.Sprintf("r%04d", i), nil, parentRef("kong", "http")))
	}
	u := NewGatewayAPIUpdater("", IngressOptions{}, nil, nil, nil, logr.Discard())
	for b.Loop() {
		a := u.attach(snap)
		if n := a.Gateways[0].Listeners[0].AttachedRoutes; n != 1000 {
			b.Fatalf("attachedRoutes %d, want 1000", n)
		}
	}
}

// KIC's ClusterRole grants update, not patch, on the Gateway API kinds' status: under it the
// status is written with Update (whole, with its resourceVersion), and the patch is not tried
// again for that kind.
func TestGatewayAPIStatusUnderKICsRole(t *testing.T) {
	ctx := context.Background()
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "kong"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: ours}}
	gw := testGateway(listener("http", gatewayv1.HTTPProtocolType, 80, ""))
	web := testRoute("default", "web", nil, parentRef("kong", ""))
	var patches, updates atomic.Int32
	c := fake.NewClientBuilder().WithScheme(store.NewScheme()).WithObjects(class, gw, web).
		WithStatusSubresource(&gatewayv1.GatewayClass{}, &gatewayv1.Gateway{}, &gatewayv1.HTTPRoute{}).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				patches.Add(1)
				return apierrors.NewForbidden(schema.GroupResource{Group: gatewayv1.GroupName, Resource: "status"}, obj.GetName(), errors.New("RBAC: patch not granted"))
			},
			SubResourceUpdate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				updates.Add(1)
				return cl.SubResource(sub).Update(ctx, obj, opts...)
			},
		}).Build()
	u := NewGatewayAPIUpdater("", IngressOptions{PublishAddresses: []string{"192.0.2.1"}}, store.New(c, store.Options{Kinds: store.NewKindSet(store.AllKinds()...)}), c, c, logr.Discard())
	u.now = func() time.Time { return t0 }
	u.Report(ctx, dataplane.Round{GatewayAPI: attach(gw, web)})
	require.NoError(t, u.Update(ctx))

	var gotGW gatewayv1.Gateway
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(gw), &gotGW))
	require.Equal(t, "192.0.2.1", gotGW.Status.Addresses[0].Value)
	var gotWeb gatewayv1.HTTPRoute
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(web), &gotWeb))
	require.Len(t, gotWeb.Status.Parents, 1)
	var gotClass gatewayv1.GatewayClass
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(class), &gotClass))
	require.Equal(t, "True/Accepted", condition(gotClass.Status.Conditions, "Accepted"))
	require.EqualValues(t, 3, updates.Load(), "the class, the Gateway and the route, each by update")
	require.EqualValues(t, 3, patches.Load(), "one refused patch per kind, then update only")
}

// The class declares its features; an API server whose GatewayClass CRD has no
// supportedFeatures (before Gateway API v1.2) drops them, and the updater stops asking for
// them rather than writing the class on every pass.
func TestGatewayAPIUpdaterSupportedFeatures(t *testing.T) {
	for _, prune := range []bool{false, true} {
		t.Run(fmt.Sprintf("pruned=%v", prune), func(t *testing.T) {
			ctx := context.Background()
			class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "kong"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: ours}}
			gw := testGateway(listener("http", gatewayv1.HTTPProtocolType, 80, ""))
			var classPatches atomic.Int32
			c := fake.NewClientBuilder().WithScheme(store.NewScheme()).WithObjects(class, gw).
				WithStatusSubresource(&gatewayv1.GatewayClass{}, &gatewayv1.Gateway{}).
				WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
					gc, ok := obj.(*gatewayv1.GatewayClass)
					if !ok {
						return cl.SubResource(sub).Patch(ctx, obj, p, opts...)
					}
					classPatches.Add(1)
					if !prune {
						return cl.SubResource(sub).Patch(ctx, obj, p, opts...)
					}
					// What an API server with an older CRD keeps: the status without the field.
					var cur gatewayv1.GatewayClass
					require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(gc), &cur))
					cur.Status = *gc.Status.DeepCopy()
					cur.Status.SupportedFeatures = nil
					require.NoError(t, cl.Status().Update(ctx, &cur))
					cur.DeepCopyInto(gc)
					return nil
				}}).Build()
			u := NewGatewayAPIUpdater("", IngressOptions{}, store.New(c, store.Options{Kinds: store.NewKindSet(store.AllKinds()...)}), c, c, logr.Discard())
			u.now = func() time.Time { return t0 }
			u.Router = func() gatewayapi.Router { return gatewayapi.Router{Expressions: true} }
			u.Report(ctx, dataplane.Round{GatewayAPI: attach(gw)})
			for range 3 {
				require.NoError(t, u.Update(ctx))
			}
			var got gatewayv1.GatewayClass
			require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(class), &got))
			require.Equal(t, "True/Accepted", condition(got.Status.Conditions, "Accepted"))
			require.EqualValues(t, 1, classPatches.Load(), "the class is written once")
			if prune {
				require.Empty(t, got.Status.SupportedFeatures)
				return
			}
			require.Equal(t, gatewayapi.SupportedFeatures(gatewayapi.Router{Expressions: true}), got.Status.SupportedFeatures)
		})
	}
}
