package manager

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/konductor/konductor/internal/store"
)

// countingLister answers every list with a fresh list and counts them.
type countingLister struct {
	lists []metav1.ListOptions
}

func (c *countingLister) List(opts metav1.ListOptions) (runtime.Object, error) {
	c.lists = append(c.lists, opts)
	return &netv1.IngressList{ListMeta: metav1.ListMeta{ResourceVersion: "from-the-informer"}}, nil
}

func (c *countingLister) Watch(metav1.ListOptions) (watch.Interface, error) {
	return watch.NewEmptyWatch(), nil
}

func answered(list runtime.Object, err error) *firstLists {
	l := &firstList{done: make(chan struct{}), list: list, err: err}
	close(l.done)
	return &firstLists{byType: map[reflect.Type]*firstList{reflect.TypeOf(&netv1.Ingress{}): l}, log: logr.Discard()}
}

// An informer's first list (resourceVersion "0", as a reflector asks it first) is the one
// asked early; every later list goes to the API server.
func TestInformerTakesTheFirstListAskedEarly(t *testing.T) {
	early := &netv1.IngressList{ListMeta: metav1.ListMeta{ResourceVersion: "early"}}
	inner := &countingLister{}
	lw := answered(early, nil).serving(inner, &netv1.Ingress{}).(toolscache.ListerWatcherWithContext)

	got, err := lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0", Limit: 500})
	require.NoError(t, err)
	require.Same(t, early, got)
	require.Empty(t, inner.lists, "the API server is not asked again")

	got, err = lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0", Limit: 500})
	require.NoError(t, err)
	require.Equal(t, "from-the-informer", got.(*netv1.IngressList).ResourceVersion, "a relist asks the API server")
	require.Len(t, inner.lists, 1)
}

// A first list that failed early, or a first list asked otherwise (a selector, another
// resourceVersion), is asked of the API server as before; what was asked early is not
// handed out later.
func TestFirstListAskedEarlyOnlyWhenItAnswersTheSameQuestion(t *testing.T) {
	early := &netv1.IngressList{ListMeta: metav1.ListMeta{ResourceVersion: "early"}}
	for name, tc := range map[string]struct {
		first *firstLists
		opts  metav1.ListOptions
	}{
		"failed":               {answered(nil, errors.New("boom")), metav1.ListOptions{ResourceVersion: "0"}},
		"other selector":       {answered(early, nil), metav1.ListOptions{ResourceVersion: "0", LabelSelector: "a=b"}},
		"other field selector": {answered(early, nil), metav1.ListOptions{ResourceVersion: "0", FieldSelector: "metadata.name=x"}},
		"consistent read":      {answered(early, nil), metav1.ListOptions{ResourceVersion: ""}},
	} {
		t.Run(name, func(t *testing.T) {
			inner := &countingLister{}
			lw := tc.first.serving(inner, &netv1.Ingress{}).(toolscache.ListerWatcherWithContext)
			got, err := lw.ListWithContext(context.Background(), tc.opts)
			require.NoError(t, err)
			require.Equal(t, "from-the-informer", got.(*netv1.IngressList).ResourceVersion)
			got, err = lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0"})
			require.NoError(t, err)
			require.Equal(t, "from-the-informer", got.(*netv1.IngressList).ResourceVersion, "asked early is handed out first or never")
			require.Len(t, inner.lists, 2)
		})
	}
}

// Kinds not asked early, and no lists asked at all, leave the informer's lister as it is.
func TestServingLeavesOtherKindsAlone(t *testing.T) {
	inner := &countingLister{}
	require.Same(t, toolscache.ListerWatcher(inner), answered(&netv1.IngressList{}, nil).serving(inner, &corev1.Secret{}))
	var none *firstLists
	require.Same(t, toolscache.ListerWatcher(inner), none.serving(inner, &netv1.Ingress{}))
}

// askFirstLists asks each wanted kind's list of the whole cluster at resourceVersion "0", in
// protobuf, as the informers would, and hands the decoded list to the kind's informer.
func TestAskFirstListsAsksWhatAReflectorAsks(t *testing.T) {
	codecs := serializer.NewCodecFactory(store.Scheme())
	pb, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	require.True(t, ok)
	asked := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked <- r.URL.Path + "?" + r.URL.RawQuery + " " + r.Header.Get("Accept")
		if r.URL.Path != "/apis/networking.k8s.io/v1/ingresses" {
			http.NotFound(w, r)
			return
		}
		list := &netv1.IngressList{
			TypeMeta: metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "IngressList"},
			ListMeta: metav1.ListMeta{ResourceVersion: "42"},
			Items:    []netv1.Ingress{{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}}},
		}
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
		require.NoError(t, pb.Serializer.Encode(list, w))
	}))
	defer srv.Close()

	first := askFirstLists(context.Background(), &rest.Config{Host: srv.URL}, func(obj runtime.Object) bool {
		_, ingress := obj.(*netv1.Ingress)
		return ingress
	}, logr.Discard())
	require.NotNil(t, first)
	require.Len(t, first.byType, 1, "only the kinds wanted are asked")
	inner := &countingLister{}
	lw := first.serving(inner, &netv1.Ingress{}).(toolscache.ListerWatcherWithContext)
	got, err := lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0", Limit: 500})
	require.NoError(t, err)
	require.Empty(t, inner.lists)
	list := got.(*netv1.IngressList)
	require.Equal(t, "42", list.ResourceVersion)
	require.Len(t, list.Items, 1)
	require.Equal(t, "a", list.Items[0].Name)
	request := <-asked
	require.Contains(t, request, "/apis/networking.k8s.io/v1/ingresses?resourceVersion=0 ")
	require.Contains(t, request, runtime.ContentTypeProtobuf)
}
