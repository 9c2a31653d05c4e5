package status

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	kongv1alpha1 "github.com/kong/kubernetes-configuration/api/configuration/v1alpha1"
	kongv1beta1 "github.com/kong/kubernetes-configuration/api/configuration/v1beta1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/store"
)

// gatedWriterCase is one status writer with objects whose status it will write.
type gatedWriterCase struct {
	name   string
	objs   []client.Object
	status []client.Object // the kinds with a status subresource
	// updater returns the updater (its writes not yet waiting at any gate) and one pass of
	// the writer under test, ready to write every object of objs whose status it writes.
	updater func(c client.Client) (GatedWriter, func(context.Context) error)
	writes  int32 // status writes of one pass
}

// gatedWriterCases are every status writer of the controller: Ingress (with TCPIngress and
// UDPIngress), Gateway API (classes and Gateways, routes, BackendTLSPolicies), Kong resources
// (Programmed conditions, KongLicense) and KongUpstreamPolicy.
func gatedWriterCases(t testing.TB) []gatedWriterCase {
	ctx := context.Background()
	f := newBackendTLSFixture(t)
	gatewayAPI := func(c client.Client) *GatewayAPIUpdater {
		u := NewGatewayAPIUpdater("", IngressOptions{}, store.New(c, store.Options{Kinds: store.NewKindSet(store.AllKinds()...)}), c, c, logr.Discard())
		u.GatewayAlpha = true
		u.Report(ctx, dataplane.Round{GatewayAPI: attach(f.gw, f.route)})
		return u
	}
	gatewayObjs, gatewayStatus := f.objects(), f.statusKinds()
	// Both written as Pending: nothing the (empty) configuration the gateway took uses them.
	kongObjs := []client.Object{
		&kongv1.KongPlugin{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cors", UID: "u-cors", Generation: 1}, PluginName: "cors"},
		&kongv1alpha1.KongLicense{ObjectMeta: metav1.ObjectMeta{Name: "license", UID: "u-license", Generation: 1}, RawLicenseString: "{}", Enabled: true},
	}
	programmed := func(c client.Client) (GatedWriter, func(context.Context) error) {
		u := NewProgrammedUpdater(store.New(c, store.Options{Kinds: store.NewKindSet(store.AllKinds()...)}), c, logr.Discard())
		u.Report(ctx, dataplane.Round{State: &kongstate.State{}, Gateways: []dataplane.GatewayResult{{URL: "http://kong"}}})
		return u, u.Update
	}
	policies := []*kongv1beta1.KongUpstreamPolicy{upstreamPolicy("p"), upstreamPolicy("p2")}
	policyServices := []*corev1.Service{policyService("a", "p"), policyService("b", "p2")}
	upstreamPolicies := func(c client.Client) (GatedWriter, func(context.Context) error) {
		u := NewUpstreamPolicyUpdater("", store.New(c, store.Options{Kinds: store.NewKindSet(store.AllKinds()...)}), c, c, logr.Discard())
		u.Report(ctx, round(translated(&store.Snapshot{Ingresses: []*netv1.Ingress{ingressTo("web", "a", "b")}, Services: policyServices,
			KongUpstreamPolicies: policies}), true))
		return u, u.Update
	}
	return []gatedWriterCase{
		{name: "Ingress, TCPIngress and UDPIngress", objs: []client.Object{servedIngress("a", "kong"), servedIngress("b", "kong"),
			&kongv1beta1.TCPIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "tcp", Annotations: classedAnnotations("kong")}},
			&kongv1beta1.UDPIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "udp", Annotations: classedAnnotations("kong")}}},
			status: []client.Object{&netv1.Ingress{}, &kongv1beta1.TCPIngress{}, &kongv1beta1.UDPIngress{}},
			updater: func(c client.Client) (GatedWriter, func(context.Context) error) {
				u := NewIngressUpdater(IngressOptions{PublishAddresses: []string{"192.0.2.1"}},
					store.New(c, store.Options{Kinds: store.NewKindSet(store.KindTCPIngress, store.KindUDPIngress)}), c, c, logr.Discard())
				return u, u.Update
			}, writes: 4},
		{name: "Gateway API classes, Gateways and BackendTLSPolicies", objs: gatewayObjs, status: gatewayStatus,
			updater: func(c client.Client) (GatedWriter, func(context.Context) error) {
				u := gatewayAPI(c)
				return u, u.updateGateways
			}, writes: 3},
		{name: "Gateway API routes", objs: gatewayObjs, status: gatewayStatus,
			updater: func(c client.Client) (GatedWriter, func(context.Context) error) {
				u := gatewayAPI(c)
				return u, u.updateRoutes
			}, writes: 1},
		{name: "Kong resources and KongLicense", objs: kongObjs,
			status: []client.Object{&kongv1.KongPlugin{}, &kongv1alpha1.KongLicense{}}, updater: programmed, writes: 2},
		{name: "KongUpstreamPolicy", objs: []client.Object{policies[0], policies[1], policyServices[0], policyServices[1]},
			status: []client.Object{&kongv1beta1.KongUpstreamPolicy{}}, updater: upstreamPolicies, writes: 2},
	}
}

// Every status writer waits at the sync loop's gate before each write: no write starts while
// a sync is pending or running. A change comes in after every write (the gate is held again,
// and released once the writer waits), so that each place the writer writes from is checked,
// not only the pass's first write.
func TestStatusWritesWaitForSyncs(t *testing.T) {
	for _, tc := range gatedWriterCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			gate := dataplane.NewSyncGate()
			gate.Clock = testingclock.NewFakeClock(time.Now()) // never moved: no wait runs out
			var writes atomic.Int32
			var passEnded atomic.Bool
			c := gatedWriterClient(tc, &writes, func(obj client.Object) {
				if gate.Busy() {
					t.Errorf("status of %T %s written while a sync is in flight", obj, obj.GetName())
				}
				release := gate.Hold() // the next write waits for this change's sync
				go func() {
					for gate.Waiters() == 0 && !passEnded.Load() {
						time.Sleep(time.Millisecond) // until the writer waits; not an assertion on time
					}
					release()
				}()
			})
			u, update := tc.updater(c)
			u.WaitForSyncs(gate)

			release := gate.Hold() // a sync in flight when the pass starts
			done := passWaitingAtGate(t, gate, func(ctx context.Context) error {
				defer passEnded.Store(true)
				return update(ctx)
			})
			require.Zero(t, writes.Load())
			release()
			require.NoError(t, <-done)
			require.Equal(t, tc.writes, writes.Load())
			gate.Wait(context.Background()) // the last write's change
		})
	}
}

// A sync that stays in flight delays a writer by the gate's MaxWait in all: once that ran out,
// the pass writes everything while the gate is still held.
func TestStatusWritesWaitForSyncsAtMostMaxWait(t *testing.T) {
	for _, tc := range gatedWriterCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			gate := dataplane.NewSyncGate()
			clk := testingclock.NewFakeClock(time.Now())
			gate.Clock = clk
			var writes atomic.Int32
			c := gatedWriterClient(tc, &writes, func(client.Object) {})
			u, update := tc.updater(c)
			u.WaitForSyncs(gate)

			release := gate.Hold()
			defer release()
			done := passWaitingAtGate(t, gate, update)
			clk.Step(gate.MaxWait - time.Nanosecond)
			select {
			case err := <-done:
				t.Fatalf("the pass ended (%v) before MaxWait with the gate held", err)
			default:
			}
			require.Zero(t, writes.Load())
			clk.Step(time.Nanosecond)
			require.NoError(t, <-done)
			require.Equal(t, tc.writes, writes.Load())
			require.True(t, gate.Busy())
		})
	}
}

// gatedWriterClient is a fake client holding tc's objects that counts status writes and calls
// onWrite before each.
func gatedWriterClient(tc gatedWriterCase, writes *atomic.Int32, onWrite func(client.Object)) client.Client {
	objs := make([]client.Object, len(tc.objs))
	for i, o := range tc.objs {
		objs[i] = o.DeepCopyObject().(client.Object)
	}
	return fake.NewClientBuilder().WithScheme(store.NewScheme()).WithObjects(objs...).WithStatusSubresource(tc.status...).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			onWrite(obj)
			writes.Add(1)
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		}}).Build()
}

// passWaitingAtGate starts update and returns once it waits at gate; it fails the test if
// the pass ends first (it did not wait).
func passWaitingAtGate(t *testing.T, gate *dataplane.SyncGate, update func(context.Context) error) chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- update(context.Background()) }()
	for gate.Waiters() == 0 {
		select {
		case err := <-done:
			t.Fatalf("the pass ended (%v) without waiting at the gate", err)
		default:
			time.Sleep(time.Millisecond) // until the pass waits; not an assertion on time
		}
	}
	return done
}
