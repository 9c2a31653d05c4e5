package manager

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
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
	return &firstLists{byType: map[reflect.Type]*firstList{reflect.TypeOf(&netv1.Ingress{}): l}}
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
