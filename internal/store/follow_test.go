package store_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// informers stands for the manager's cache: an informer store (the informer's own objects)
// for Ingresses, Services and EndpointSlices, a fake client for every other read. Like an
// informer, it updates its store first and then tells the handlers.
type informers struct {
	client.Reader
	stores   map[string]toolscache.Store
	handlers []toolscache.ResourceEventHandler
}

func newInformers(t testing.TB, objs ...client.Object) *informers {
	c := &informers{stores: map[string]toolscache.Store{}}
	for _, k := range []string{"Ingress", "Service", "EndpointSlice", "Secret"} {
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
	switch o.(type) {
	case *netv1.Ingress:
		return c.stores["Ingress"]
	case *corev1.Service:
		return c.stores["Service"]
	case *discoveryv1.EndpointSlice:
		return c.stores["EndpointSlice"]
	case *corev1.Secret:
		return c.stores["Secret"]
	}
	return nil
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
// watched) and deletes of Ingresses, Services and EndpointSlices, each snapshot of a Follower
// holds the very objects a full Snapshot lists, and an Incremental translating the Follower's
// snapshots (which then looks at the changed keys only) renders what a full Build of the full
// Snapshot renders.
func TestFollowerMatchesSnapshot(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewSource(13))
	c := newInformers(t)
	st := store.New(c, store.Options{Namespaces: []string{"a", "b"}})
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
	mutate := func() {
		version++
		kind := rng.Intn(3)
		name := fmt.Sprintf("o%d", rng.Intn(40))
		ns := namespaces[rng.Intn(len(namespaces))]
		id := fmt.Sprintf("%d/%s/%s", kind, ns, name)
		meta := metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: fmt.Sprint(version), UID: types.UID("u-" + id)}
		var o client.Object
		switch kind {
		case 0:
			pt := netv1.PathTypePrefix
			o = &netv1.Ingress{ObjectMeta: meta, Spec: netv1.IngressSpec{IngressClassName: classes[rng.Intn(len(classes))],
				Rules: []netv1.IngressRule{{Host: fmt.Sprintf("h%d.example.com", rng.Intn(5)), IngressRuleValue: netv1.IngressRuleValue{
					HTTP: &netv1.HTTPIngressRuleValue{Paths: []netv1.HTTPIngressPath{{Path: "/" + name, PathType: &pt,
						Backend: netv1.IngressBackend{Service: &netv1.IngressServiceBackend{Name: backend(name),
							Port: netv1.ServiceBackendPort{Number: 80}}}}}}}}}}}
		case 1:
			o = &corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, Name: "http"}}}}
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
	for round := 0; round < 300; round++ {
		n := rng.Intn(6)
		if round%10 == 5 {
			n = 40 // a burst: many objects created, changed and deleted between two snapshots
		}
		for ; n > 0; n-- {
			mutate()
		}
		got, err := f.Snapshot(ctx)
		require.NoError(t, err)
		want, err := st.Snapshot(ctx)
		require.NoError(t, err)
		require.ElementsMatch(t, objectKeys(want.Ingresses), objectKeys(got.Ingresses), "round %d", round)
		require.ElementsMatch(t, objectKeys(want.Services), objectKeys(got.Services), "round %d", round)
		require.ElementsMatch(t, objectKeys(want.EndpointSlices), objectKeys(got.EndpointSlices), "round %d", round)
		if round > 0 && round%50 != 0 {
			require.NotNil(t, got.Changes, "round %d followed", round)
		}
		// A Follower finds a changed object by a binary search of its previous slices.
		require.True(t, sortedByKey(got.Ingresses) && sortedByKey(got.Services) && sortedByKey(got.EndpointSlices),
			"round %d: a Follower's slices are sorted by namespace and name", round)

		res := inc.Build(got, translator.Options{})
		full := translator.Build(want, translator.Options{})
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
