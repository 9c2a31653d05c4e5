package manager

import (
	"context"
	"sync"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// promptSyncCache is the manager's cache with a WaitForCacheSync that returns as soon as the
// last informer synced. controller-runtime's own (client-go's WaitForCacheSync) polls every
// 100 ms, and the manager starts the sync loop, a leader-election runnable, only once it
// returned: up to 100 ms between a synced cache and the first push (issue #13). Here the wait
// is on the informers' DoneChecker channels; controller-runtime's check, which looks at once
// before its first poll, then finds everything synced.
type promptSyncCache struct {
	cache.Cache

	mu       sync.Mutex
	checkers []toolscache.DoneChecker
}

// promptSync wraps a cache so that its WaitForCacheSync waits on informer channels.
func promptSync(c cache.Cache) cache.Cache { return &promptSyncCache{Cache: c} }

// GetInformer registers the informer's sync checker for WaitForCacheSync.
func (c *promptSyncCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	inf, err := c.Cache.GetInformer(ctx, obj, opts...)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.checkers = append(c.checkers, inf.HasSyncedChecker())
	c.mu.Unlock()
	return inf, nil
}

// WaitForCacheSync waits on the registered informers' channels, then lets the cache confirm
// (an informer registered otherwise is still waited for, by the cache's own poll).
func (c *promptSyncCache) WaitForCacheSync(ctx context.Context) bool {
	c.mu.Lock()
	checkers := append([]toolscache.DoneChecker(nil), c.checkers...)
	c.mu.Unlock()
	if !toolscache.WaitFor(ctx, "", checkers...) {
		return false
	}
	return c.Cache.WaitForCacheSync(ctx)
}
