package manager

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/konductor/konductor/internal/store"
)

// recordingLW answers lists with every object in one response, as an API server does for
// resourceVersion "0", and records the options of each list.
type recordingLW struct {
	mu    sync.Mutex
	lists []metav1.ListOptions
	list  func() runtime.Object
}

func (r *recordingLW) lw() *toolscache.ListWatch {
	return &toolscache.ListWatch{
		ListWithContextFunc: func(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			r.mu.Lock()
			r.lists = append(r.lists, opts)
			r.mu.Unlock()
			return r.list(), nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return watch.NewFake(), nil
		},
	}
}

func (r *recordingLW) recorded() []metav1.ListOptions {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]metav1.ListOptions(nil), r.lists...)
}

func runInformer(t *testing.T, inf toolscache.SharedIndexInformer) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go inf.RunWithContext(ctx)
	require.True(t, toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced))
}

// The cache's informer of Secrets lists in pages (store.PagedList) and its Secrets come out of
// the cache transform; other kinds' informers list as client-go does.
func TestNewInformerPagesTheSecretsOnly(t *testing.T) {
	disableWatchListClient() // as New does: informers list (client-go's default since 1.35 is a streamed list)
	newInformer := newInformerPagingSecrets(store.NewSecretPayloads(nil).Transform)

	secrets := &recordingLW{list: func() runtime.Object {
		list := &corev1.SecretList{ListMeta: metav1.ListMeta{ResourceVersion: "5"}}
		for i := range 3 {
			list.Items = append(list.Items, corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("s%d", i)},
				Data: map[string][]byte{"k": []byte("v")}})
		}
		return list
	}}
	inf := newInformer(secrets.lw(), &corev1.Secret{}, 0, toolscache.Indexers{})
	runInformer(t, inf)
	lists := secrets.recorded()
	require.NotEmpty(t, lists)
	require.Equal(t, int64(store.SecretListPageSize), lists[0].Limit)
	require.Empty(t, lists[0].ResourceVersion, "the most recent state, which the API server pages")
	require.Len(t, inf.GetStore().List(), 3)
	for _, obj := range inf.GetStore().List() {
		s := obj.(*corev1.Secret)
		require.Nil(t, s.Data, "%s: unreferenced, cached without its data", s.Name)
		require.True(t, store.PayloadNotCached(s))
	}

	services := &recordingLW{list: func() runtime.Object {
		return &corev1.ServiceList{ListMeta: metav1.ListMeta{ResourceVersion: "5"}, Items: []corev1.Service{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}}}
	}}
	runInformer(t, newInformer(services.lw(), &corev1.Service{}, 0, toolscache.Indexers{}))
	lists = services.recorded()
	require.NotEmpty(t, lists)
	require.Equal(t, "0", lists[0].ResourceVersion, "other kinds: client-go's first list, from the watch cache")
}
