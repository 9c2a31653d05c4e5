package manager

import (
	"context"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

type doneChecker chan struct{}

func (d doneChecker) Name() string          { return "fake" }
func (d doneChecker) Done() <-chan struct{} { return d }

type fakeInformer struct {
	cache.Informer
	done doneChecker
}

func (f fakeInformer) HasSyncedChecker() toolscache.DoneChecker { return f.done }

// fakeCache hands out one informer and counts its own (polling) WaitForCacheSync calls.
type fakeCache struct {
	cache.Cache
	inf        fakeInformer
	innerWaits atomic.Int32
}

func (f *fakeCache) GetInformer(context.Context, client.Object, ...cache.InformerGetOption) (cache.Informer, error) {
	return f.inf, nil
}

func (f *fakeCache) WaitForCacheSync(context.Context) bool {
	f.innerWaits.Add(1)
	return true
}

// WaitForCacheSync waits on the informers' channels: it does not return while one has not
// synced, and asks the inner cache only once all have.
func TestPromptSyncCacheWaitsOnInformerChannels(t *testing.T) {
	inner := &fakeCache{inf: fakeInformer{done: make(doneChecker)}}
	c := &promptSyncCache{Cache: inner}
	if _, err := c.GetInformer(context.Background(), &corev1.Secret{}); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if c.WaitForCacheSync(ctx) {
		t.Fatal("synced while an informer has not")
	}
	if inner.innerWaits.Load() != 0 {
		t.Fatal("inner cache asked before the informers synced")
	}

	close(inner.inf.done)
	if !c.WaitForCacheSync(context.Background()) {
		t.Fatal("not synced after every informer did")
	}
	if inner.innerWaits.Load() != 1 {
		t.Fatalf("inner cache asked %d times, want once", inner.innerWaits.Load())
	}
}
