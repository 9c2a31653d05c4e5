package store_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"

	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// informers stands for the manager's cache: an informer store (the informer's own objects)
// for Ingresses, Services, EndpointSlices, Secrets, KongPlugins, KongConsumers, HTTPRoutes and
// Gateways, a fake client for every other read. Like an informer, it updates its store first
// and then tells the handlers.
type informers struct {
	client.Reader
	stores   map[string]toolscache.Store
	handlers []toolscache.ResourceEventHandler
}

func newInformers(t testing.TB, objs ...client.Object) *informers {
	c := &informers{stores: map[string]toolscache.Store{}}
	for _, k := range []string{"Ingress", "Service", "EndpointSlice", "Secret", "KongPlugin", "KongConsumer", "HTTPRoute", "Gateway"} {
		c.stores[k] = toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	}
	c.Reader = fakeReader(t)
	for _, o := range objs {
		require.NoError(t, c.storeFor(o).Add(o))
	}
	return c
}

// fakeReader is an empty fake client of the store's scheme.
func fakeReader(testing.TB) client.Reader {
	return fake.NewClientBuilder().WithScheme(store.NewScheme()).Build()
}

func (c *informers) storeFor(o any) toolscache.Store {
	return c.stores[reflect.TypeOf(o).Elem().Name()]
}

type fakeInformer struct {
	cache.Informer // not called
	store          toolscache.Store
}

func (i fakeInformer) HasSynced() bool            { return true }
func (i fakeInformer) GetStore() toolscache.Store { return i.store }

func (c *informers) GetInformer(_ context.Context, obj client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	if s := c.storeFor(obj); s != nil {
		return fakeInformer{store: s}, nil
	}
	return nil, errors.New("no informer")
}

func (c *informers) add(t testing.TB, o client.Object) {
	require.NoError(t, c.storeFor(o).Add(o))
	for _, h := range c.handlers {
		h.OnAdd(o, false)
	}
}

func (c *informers) update(t testing.TB, o client.Object) {
	old, _, err := c.storeFor(o).Get(o)
	require.NoError(t, err)
	require.NoError(t, c.storeFor(o).Update(o))
	for _, h := range c.handlers {
		h.OnUpdate(old, o)
	}
}

func (c *informers) remove(t testing.TB, o client.Object, tombstone bool) {
	require.NoError(t, c.storeFor(o).Delete(o))
	var ev any = o
	if tombstone {
		ev = toolscache.DeletedFinalStateUnknown{Key: o.GetNamespace() + "/" + o.GetName(), Obj: o}
	}
	for _, h := range c.handlers {
		h.OnDelete(ev)
	}
}

type nopHandler struct{}

func (nopHandler) OnAdd(any, bool)   {}
func (nopHandler) OnUpdate(any, any) {}
func (nopHandler) OnDelete(any)      {}

func objectKeys[T client.Object](objs []T) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, fmt.Sprintf("%s/%s@%p", o.GetNamespace(), o.GetName(), any(o)))
	}
	return out
}

// sortedByKey reports whether objs are sorted by namespace, then name.
func sortedByKey[T client.Object](objs []T) bool {
	return slices.IsSortedFunc(objs, func(a, b T) int {
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
}

// TestFollowerMatchesSnapshot: after random creates, updates (class changes, namespaces not
// watched) and deletes of Ingresses, Services, EndpointSlices, KongPlugins, KongConsumers,
// HTTPRoutes and Gateways, each snapshot of a Follower holds the very objects a full Snapshot
// lists, and an Incremental translating the Follower's snapshots (which then looks at the
// changed keys only) renders what a full Build of the full Snapshot renders.
func TestFollowerMatchesSnapshot(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewSource(13))
	c := newInformers(t)
	// The GatewayClass is read from the client, listed by every snapshot.
	c.Reader = fake.NewClientBuilder().WithScheme(store.NewScheme()).WithObjects(&gatewayv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: "kong"}, Spec: gatewayv1.GatewayClassSpec{ControllerName: gatewayapi.DefaultControllerName}}).Build()
	followedKinds := store.NewKindSet(store.KindKongPlugin, store.KindKongConsumer, store.KindHTTPRoute, store.KindGateway)
	st := store.New(c, store.Options{Namespaces: []string{"a", "b"},
		Kinds: store.NewKindSet(store.KindKongPlugin, store.KindKongConsumer, store.KindHTTPRoute, store.KindGateway, store.KindGatewayClass)})
	f := st.Follow()
	c.handlers = append(c.handlers, f.Recording(nopHandler{}))
	inc := &translator.Incremental{}
	classes := []*string{ptr("kong"), ptr("kong"), ptr("other"), nil}
	namespaces := []string{"a", "a", "b", "c"}
	live := map[string]client.Object{}
	var keys []string
	version := 0
	// Mostly the object's own Service, so that a change reaches few Ingresses.
	backend := func(name string) string {
		if rng.Intn(4) == 0 {
			return fmt.Sprintf("o%d", rng.Intn(40))
		}
		return name
	}
	payloadReader := &secretReader{secrets: map[types.NamespacedName]*corev1.Secret{}}
	mutate := func() {
		version++
		kind := rng.Intn(8)
		name := fmt.Sprintf("o%d", rng.Intn(40))
		if kind == 7 {
			name = fmt.Sprintf("s%d", rng.Intn(8)) // a consumer's credential
		}
		ns := namespaces[rng.Intn(len(namespaces))]
		if kind == 6 {
			name, ns = "gw", "a" // the one Gateway, its listener changed
		}
		id := fmt.Sprintf("%d/%s/%s", kind, ns, name)
		meta := metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: fmt.Sprint(version), UID: types.UID("u-" + id)}
		var o client.Object
		switch kind {
		case 0:
			pt := netv1.PathTypePrefix
			if rng.Intn(3) == 0 {
				meta.Annotations = map[string]string{"konghq.com/plugins": fmt.Sprintf("o%d", rng.Intn(40))}
			}
			o = &netv1.Ingress{ObjectMeta: meta, Spec: netv1.IngressSpec{IngressClassName: classes[rng.Intn(len(classes))],
				Rules: []netv1.IngressRule{{Host: fmt.Sprintf("h%d.example.com", rng.Intn(5)), IngressRuleValue: netv1.IngressRuleValue{
					HTTP: &netv1.HTTPIngressRuleValue{Paths: []netv1.HTTPIngressPath{{Path: "/" + name, PathType: &pt,
						Backend: netv1.IngressBackend{Service: &netv1.IngressServiceBackend{Name: backend(name),
							Port: netv1.ServiceBackendPort{Number: 80}}}}}}}}}}}
		case 1:
			o = &corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, Name: "http"}}}}
		case 3:
			o = &kongv1.KongPlugin{ObjectMeta: meta, PluginName: []string{"cors", "key-auth", "request-termination"}[rng.Intn(3)]}
		case 4:
			if class := classes[rng.Intn(len(classes))]; class != nil {
				meta.Annotations = map[string]string{"kubernetes.io/ingress.class": *class}
			}
			o = &kongv1.KongConsumer{ObjectMeta: meta, Username: fmt.Sprintf("user%d", rng.Intn(20)),
				Credentials: []string{fmt.Sprintf("s%d", rng.Intn(8))}}
		case 7:
			// A credential, cached with its data or without (SecretPayloads then loads it
			// from the API server, payloadReader here, when a consumer refers to it).
			meta.Labels = map[string]string{"konghq.com/credential": "key-auth"}
			full := &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"key": []byte(fmt.Sprintf("key-%d", version))}}
			o = full
			if rng.Intn(2) == 0 {
				stub := full.DeepCopy()
				stub.Data, stub.Annotations = nil, map[string]string{store.PayloadNotCachedAnnotation: "true"}
				o = stub
			}
			payloadReader.secrets[types.NamespacedName{Namespace: ns, Name: name}] = full
		case 5:
			port := gatewayv1.PortNumber(80)
			o = &gatewayv1.HTTPRoute{ObjectMeta: meta, Spec: gatewayv1.HTTPRouteSpec{
				CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "gw", Namespace: ptrTo(gatewayv1.Namespace("a"))}}},
				Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname(fmt.Sprintf("r%d.example.com", rng.Intn(5)))},
				Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
					BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(backend(name)), Port: &port}}}}}}}}
		case 6:
			from := gatewayv1.NamespacesFromAll
			o = &gatewayv1.Gateway{ObjectMeta: meta, Spec: gatewayv1.GatewaySpec{GatewayClassName: "kong", Listeners: []gatewayv1.Listener{{
				Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: gatewayv1.PortNumber(80 + rng.Intn(2)),
				AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: &from}}}}}}
		default:
			meta.Labels = map[string]string{discoveryv1.LabelServiceName: backend(name)}
			port, ready := int32(8080), rng.Intn(2) == 0
			o = &discoveryv1.EndpointSlice{ObjectMeta: meta, AddressType: discoveryv1.AddressTypeIPv4,
				Ports:     []discoveryv1.EndpointPort{{Port: &port}},
				Endpoints: []discoveryv1.Endpoint{{Addresses: []string{fmt.Sprintf("10.0.0.%d", rng.Intn(200))}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}}}
		}
		old, exists := live[id]
		switch {
		case !exists:
			c.add(t, o)
			live[id] = o
			keys = append(keys, id)
		case rng.Intn(4) == 0:
			c.remove(t, old, rng.Intn(2) == 0)
			delete(live, id)
		default:
			c.update(t, o)
			live[id] = o
		}
	}
	payloads := store.NewSecretPayloads(payloadReader)
	// translate is the manager's round: a translation, and another once the Secrets it
	// refers to that the cache holds without their data are loaded.
	translate := func(snap *store.Snapshot, build func(*store.Snapshot) translator.Result) (*store.Snapshot, translator.Result) {
		res := build(snap)
		complete, err := payloads.Complete(ctx, snap, func(_ store.Kind, ns, name string) bool {
			return len(res.Graph.ReferredBy(kongstate.ObjectRef{Version: "v1", Kind: "Secret", Namespace: ns, Name: name})) > 0
		})
		require.NoError(t, err)
		if complete == nil {
			return snap, res
		}
		return complete, build(complete)
	}
	for round := 0; round < 300; round++ {
		n := rng.Intn(6)
		if round%10 == 5 {
			n = 40 // a burst: many objects created, changed and deleted between two snapshots
		}
		for ; n > 0; n-- {
			mutate()
		}
		got, err := payloads.Source(f).Snapshot(ctx)
		require.NoError(t, err)
		want, err := payloads.Source(st).Snapshot(ctx)
		require.NoError(t, err)
		require.ElementsMatch(t, objectKeys(want.Ingresses), objectKeys(got.Ingresses), "round %d", round)
		require.ElementsMatch(t, objectKeys(want.Services), objectKeys(got.Services), "round %d", round)
		require.ElementsMatch(t, objectKeys(want.EndpointSlices), objectKeys(got.EndpointSlices), "round %d", round)
		require.ElementsMatch(t, objectKeys(want.KongPlugins), objectKeys(got.KongPlugins), "round %d", round)
		require.ElementsMatch(t, objectKeys(want.KongConsumers), objectKeys(got.KongConsumers), "round %d", round)
		require.ElementsMatch(t, objectKeys(want.HTTPRoutes), objectKeys(got.HTTPRoutes), "round %d", round)
		require.ElementsMatch(t, objectKeys(want.Gateways), objectKeys(got.Gateways), "round %d", round)
		if round > 0 && round%50 != 0 {
			require.NotNil(t, got.Changes, "round %d followed", round)
			for k := range followedKinds {
				require.True(t, got.Changes.Followed(k), "round %d follows %s", round, k)
			}
			require.True(t, got.Changes.Followed(store.KindSecret), "round %d follows Secrets, as SecretPayloads fills them", round)
		}
		// A Follower finds a changed object by a binary search of its previous slices.
		require.True(t, sortedByKey(got.Ingresses) && sortedByKey(got.Services) && sortedByKey(got.EndpointSlices) &&
			sortedByKey(got.KongPlugins) && sortedByKey(got.KongConsumers) && sortedByKey(got.HTTPRoutes),
			"round %d: a Follower's slices are sorted by namespace and name", round)

		opts := translator.Options{}
		got, res := translate(got, func(s *store.Snapshot) translator.Result { return inc.Build(s, opts) })
		want, full := translate(want, func(s *store.Snapshot) translator.Result { return translator.Build(s, opts) })
		require.ElementsMatch(t, objectKeys(want.Secrets), objectKeys(got.Secrets), "round %d", round)
		gotBody, err := (&kongstate.Renderer{}).DeclarativeConfig(res.State)
		require.NoError(t, err)
		wantBody, err := full.State.DeclarativeConfig()
		require.NoError(t, err)
		require.Equal(t, string(wantBody), string(gotBody), "round %d", round)
		require.Equal(t, full.Problems, res.Problems, "round %d", round)
		if round%50 == 49 {
			f.FullEvery = 1 // the next snapshot lists everything
		} else {
			f.FullEvery = 0
		}
	}
	require.Positive(t, inc.Stats.Partial, inc.Stats.LastReason)
	require.Positive(t, payloadReader.reads, "Secrets cached without their data were loaded")
}

// secretReader stands for the API server SecretPayloads loads Secrets from: the latest
// version of each Secret, whole (one that was deleted is still there, as the API server
// may still hold it when the cache's delete arrives: SecretPayloads must check its version).
type secretReader struct {
	secrets map[types.NamespacedName]*corev1.Secret
	reads   int
}

func (r *secretReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	s, ok := r.secrets[key]
	if !ok {
		return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	}
	r.reads++
	s.DeepCopyInto(obj.(*corev1.Secret))
	return nil
}

func (r *secretReader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	l := list.(*corev1.SecretList)
	for _, s := range r.secrets {
		if lo.Namespace == "" || s.Namespace == lo.Namespace {
			r.reads++
			l.Items = append(l.Items, *s.DeepCopy())
		}
	}
	return nil
}

// TestFollowerSeesAChangeNotedAfterItsSnapshot: a change the informer stored while a snapshot
// was made, but whose event came after, is in the next snapshot.
func TestFollowerSeesAChangeNotedAfterItsSnapshot(t *testing.T) {
	ctx := context.Background()
	ing := &netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "x", ResourceVersion: "1"},
		Spec: netv1.IngressSpec{IngressClassName: ptr("kong")}}
	c := newInformers(t, ing)
	st := store.New(c, store.Options{})
	f := st.Follow()
	c.handlers = append(c.handlers, f.Recording(nopHandler{}))
	_, err := f.Snapshot(ctx)
	require.NoError(t, err)

	newer := ing.DeepCopy()
	newer.ResourceVersion = "2"
	require.NoError(t, c.storeFor(newer).Update(newer)) // stored; its event not handled yet
	snap, err := f.Snapshot(ctx)
	require.NoError(t, err)
	require.Same(t, ing, snap.Ingresses[0], "nothing noted yet: the previous object")

	for _, h := range c.handlers {
		h.OnUpdate(ing, newer)
	}
	snap, err = f.Snapshot(ctx)
	require.NoError(t, err)
	require.Same(t, newer, snap.Ingresses[0])
	require.NotNil(t, snap.Changes)
	require.Equal(t, snap.Seq-1, snap.Changes.Since)
}

// TestFollowerListsWithoutInformers: over a reader that is not an informer cache, every
// snapshot is a full list.
func TestFollowerListsWithoutInformers(t *testing.T) {
	ctx := context.Background()
	s, err := store.NewForObjects([]client.Object{&netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "x"},
		Spec: netv1.IngressSpec{IngressClassName: ptr("kong")}}}, store.Options{})
	require.NoError(t, err)
	f := s.Follow()
	f.Recording(nopHandler{})
	for range 3 {
		snap, err := f.Snapshot(ctx)
		require.NoError(t, err)
		require.Nil(t, snap.Changes)
		require.Len(t, snap.Ingresses, 1)
	}
}

func ptr(s string) *string { return &s }

func ptrTo[T any](v T) *T { return &v }

// TestFollowerChangesShowLoadedSecrets: a Secret the cache holds without its data is
// absent from a Follower's snapshot while pending; once SecretPayloads loads it (no informer
// event comes of a load), the completed snapshot and the next one both list it as changed,
// with its loaded copy, so that whatever translated the snapshot before sees it come.
func TestFollowerChangesShowLoadedSecrets(t *testing.T) {
	ctx := context.Background()
	meta := metav1.ObjectMeta{Namespace: "a", Name: "cred", UID: "u-cred", ResourceVersion: "1"}
	full := &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"key": []byte("k")}}
	stub := full.DeepCopy()
	stub.Data, stub.Annotations = nil, map[string]string{store.PayloadNotCachedAnnotation: "true"}
	c := newInformers(t, stub)
	f := store.New(c, store.Options{}).Follow()
	c.handlers = append(c.handlers, f.Recording(nopHandler{}))
	reader := &secretReader{secrets: map[types.NamespacedName]*corev1.Secret{{Namespace: "a", Name: "cred"}: full}}
	payloads := store.NewSecretPayloads(reader)
	src := payloads.Source(f)

	first, err := src.Snapshot(ctx)
	require.NoError(t, err)
	require.Empty(t, first.Secrets)
	require.Len(t, first.SecretsPending, 1)
	second, err := src.Snapshot(ctx) // followed: nothing changed
	require.NoError(t, err)
	require.True(t, second.Changes.Followed(store.KindSecret))
	require.Empty(t, second.Changes.Of(store.KindSecret))

	completed, err := payloads.Complete(ctx, second, func(store.Kind, string, string) bool { return true })
	require.NoError(t, err)
	require.Len(t, completed.Secrets, 1)
	key := types.NamespacedName{Namespace: "a", Name: "cred"}
	require.Equal(t, completed.Secrets[0], completed.Changes.Of(store.KindSecret)[key], "the completed snapshot says the Secret came")
	require.Empty(t, second.Changes.Of(store.KindSecret), "the snapshot completed is not changed")

	third, err := src.Snapshot(ctx)
	require.NoError(t, err)
	require.Equal(t, third.Seq-1, third.Changes.Since)
	require.Len(t, third.Secrets, 1)
	require.Equal(t, third.Secrets[0], third.Changes.Of(store.KindSecret)[key], "loaded since the last snapshot: changed, though no event came")
	require.Equal(t, "k", string(third.Secrets[0].Data["key"]))

	fourth, err := src.Snapshot(ctx)
	require.NoError(t, err)
	require.Empty(t, fourth.Changes.Of(store.KindSecret), "said once")
	require.Len(t, fourth.Secrets, 1)

	// Its next version comes as an event, cached whole (referenced now): followed as any.
	newer := full.DeepCopy()
	newer.ResourceVersion, newer.Data = "2", map[string][]byte{"key": []byte("k2")}
	c.update(t, newer)
	fifth, err := src.Snapshot(ctx)
	require.NoError(t, err)
	require.Same(t, newer, fifth.Changes.Of(store.KindSecret)[key])
	require.Equal(t, []*corev1.Secret{newer}, fifth.Secrets)
}
