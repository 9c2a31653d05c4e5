package manager

import (
	"context"
	"reflect"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// firstLists are the first lists of the built-in kinds a big cluster has most of (Ingresses,
// Services, EndpointSlices), asked of the API server as soon as it answers, while discovery
// runs and the manager is built, instead of when the manager starts its informers some
// 20-30 ms later on a warm start (more when the API server is slow): those three lists are
// the longest step before the first push (docs/performance.md, Start). Each informer of these
// kinds then takes the answer as its first list (ListerWatcher), exactly as if it had asked
// it: a list at resourceVersion "0" (any recent state, what a reflector's first list asks),
// after which it watches from that list's resourceVersion as usual. An error, or a first list
// asked otherwise, goes to the API server as before.
type firstLists struct {
	byType map[reflect.Type]*firstList
}

type firstList struct {
	done chan struct{} // closed once the answer is in
	list runtime.Object
	err  error
	once sync.Once // the answer is handed out once
}

// prefetchedKinds are the kinds whose first list is asked early: built-in (no CRD or
// discovery needed), and the ones of which a cluster has thousands.
func prefetchedKinds() []struct {
	obj      runtime.Object
	list     func() runtime.Object
	gvk      schema.GroupVersionKind
	resource string
} {
	return []struct {
		obj      runtime.Object
		list     func() runtime.Object
		gvk      schema.GroupVersionKind
		resource string
	}{
		{&netv1.Ingress{}, func() runtime.Object { return &netv1.IngressList{} }, netv1.SchemeGroupVersion.WithKind("Ingress"), "ingresses"},
		{&corev1.Service{}, func() runtime.Object { return &corev1.ServiceList{} }, corev1.SchemeGroupVersion.WithKind("Service"), "services"},
		{&discoveryv1.EndpointSlice{}, func() runtime.Object { return &discoveryv1.EndpointSliceList{} }, discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"), "endpointslices"},
	}
}

// askFirstLists asks the API server of restCfg for the prefetched kinds' lists that want
// (an informer of the whole cluster, all objects: no --watch-namespace, no cache selector),
// each in a goroutine, on a connection of its own; nil when it cannot even build a client
// (the informers then ask, as before).
func askFirstLists(ctx context.Context, restCfg *rest.Config, want func(obj runtime.Object) bool) *firstLists {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, netv1.AddToScheme, discoveryv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil
		}
	}
	codecs := serializer.NewCodecFactory(scheme)
	httpClient, err := rest.HTTPClientFor(restCfg)
	if err != nil {
		return nil
	}
	f := &firstLists{byType: map[reflect.Type]*firstList{}}
	for _, k := range prefetchedKinds() {
		if !want(k.obj) {
			continue
		}
		rc, err := apiutil.RESTClientForGVK(k.gvk, false, false, restCfg, codecs, httpClient)
		if err != nil {
			return nil
		}
		l := &firstList{done: make(chan struct{})}
		f.byType[reflect.TypeOf(k.obj)] = l
		go func() {
			defer close(l.done)
			list := k.list()
			l.err = rc.Get().Resource(k.resource).
				VersionedParams(&metav1.ListOptions{ResourceVersion: "0"}, metav1.ParameterCodec).
				Do(ctx).Into(list)
			l.list = list
		}()
	}
	return f
}

// serving returns lw for an informer of obj, its first list the one asked early when obj is
// of a prefetched kind.
func (f *firstLists) serving(lw toolscache.ListerWatcher, obj runtime.Object) toolscache.ListerWatcher {
	if f == nil {
		return lw
	}
	l := f.byType[reflect.TypeOf(obj)]
	if l == nil {
		return lw
	}
	return &firstListServed{inner: toolscache.ToListerWatcherWithContext(lw), first: l}
}

// firstListServed answers the informer's first list with the one asked early, when it asks
// what was asked (every object at resourceVersion "0"), and everything else from inner.
type firstListServed struct {
	inner toolscache.ListerWatcherWithContext
	first *firstList
}

var _ toolscache.ListerWatcherWithContext = (*firstListServed)(nil)

func (s *firstListServed) List(opts metav1.ListOptions) (runtime.Object, error) {
	return s.ListWithContext(context.Background(), opts)
}

func (s *firstListServed) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return s.WatchWithContext(context.Background(), opts)
}

func (s *firstListServed) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return s.inner.WatchWithContext(ctx, opts)
}

func (s *firstListServed) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	var list runtime.Object
	s.first.once.Do(func() {
		if opts.ResourceVersion != "0" || opts.LabelSelector != "" || opts.FieldSelector != "" || opts.Continue != "" {
			return
		}
		select {
		case <-s.first.done:
		case <-ctx.Done():
			return
		}
		if s.first.err == nil {
			list = s.first.list
		}
		s.first.list = nil // its objects are the informer's now
	})
	if list != nil {
		return list, nil
	}
	return s.inner.ListWithContext(ctx, opts)
}
