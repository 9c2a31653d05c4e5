package dataplane

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Barrier is the fact that the cache has synced. WaitForCacheSync returns nil once every
// informer the store reads has synced, or ctx's error if ctx ends first.
type Barrier interface {
	WaitForCacheSync(ctx context.Context) error
}

// InformerBarrier waits for the informers of a set of kinds in a controller-runtime cache.
type InformerBarrier struct {
	informers []cache.Informer
	checkers  []toolscache.DoneChecker

	// Informers added after start (AddLateInformer) get every event handler, now and later;
	// the barrier does not wait for them (their owner publishes their kind once synced).
	mu       sync.Mutex
	handlers []toolscache.ResourceEventHandler
	late     []cache.Informer
}

// NewInformerBarrier registers (without waiting) an informer for each object's kind in c and
// returns a barrier over them. Call it before the manager starts, so the informers start with
// the cache on every replica, leader or not (warm standby, invariant 3).
func NewInformerBarrier(ctx context.Context, c cache.Informers, objs ...client.Object) (*InformerBarrier, error) {
	b := &InformerBarrier{}
	for _, obj := range objs {
		inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			return nil, fmt.Errorf("registering informer for %T: %w", obj, err)
		}
		b.informers = append(b.informers, inf)
		b.checkers = append(b.checkers, namedChecker{inf.HasSyncedChecker(), fmt.Sprintf("%T", obj)})
	}
	return b, nil
}

// AddEventHandler adds h to every informer the barrier waits for: the same set of kinds is
// both what a sync waits for and what triggers one.
func (b *InformerBarrier) AddEventHandler(h toolscache.ResourceEventHandler) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, inf := range append(append([]cache.Informer(nil), b.informers...), b.late...) {
		if _, err := inf.AddEventHandler(h); err != nil {
			return err
		}
	}
	b.handlers = append(b.handlers, h)
	return nil
}

// AddLateInformer gives an informer registered after start (the kind of a CRD installed
// meanwhile) every event handler of the barrier. The barrier does not wait for it: whoever
// added it lets the store read its kind only after it synced.
func (b *InformerBarrier) AddLateInformer(inf cache.Informer) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, h := range b.handlers {
		if _, err := inf.AddEventHandler(h); err != nil {
			return err
		}
	}
	b.late = append(b.late, inf)
	return nil
}

// RemoveInformer forgets an informer, registered at start or late (its CRD was removed and
// the informer stopped): the barrier no longer waits for it or reports it.
func (b *InformerBarrier) RemoveInformer(inf cache.Informer) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.late = slices.DeleteFunc(b.late, func(i cache.Informer) bool { return i == inf })
	if i := slices.Index(b.informers, inf); i >= 0 {
		b.informers = slices.Delete(b.informers, i, i+1)
		b.checkers = slices.Delete(b.checkers, i, i+1)
	}
}

type namedChecker struct {
	toolscache.DoneChecker
	name string
}

func (n namedChecker) Name() string { return n.name }

// WaitForCacheSync implements Barrier.
func (b *InformerBarrier) WaitForCacheSync(ctx context.Context) error {
	if toolscache.WaitFor(ctx, "", b.currentCheckers()...) {
		return nil
	}
	return fmt.Errorf("cache not synced (waiting for %s): %w", strings.Join(b.Pending(), ", "), ctx.Err())
}

// LogEachSync logs (at V(1)) each informer's sync as it happens, with the time since since:
// the start's timeline (docs/performance.md), which shows which kind's first list the first
// sync waited for. It returns at once; its goroutines end with ctx.
func (b *InformerBarrier) LogEachSync(ctx context.Context, log logr.Logger, since time.Time) {
	if !log.V(1).Enabled() {
		return
	}
	for _, c := range b.currentCheckers() {
		go func() {
			select {
			case <-c.Done():
				log.V(1).Info("informer synced", "kind", c.Name(), "sinceStart", time.Since(since).String())
			case <-ctx.Done():
			}
		}()
	}
}

// Synced reports, without blocking, whether every informer has synced.
func (b *InformerBarrier) Synced() bool {
	for _, c := range b.currentCheckers() {
		if !toolscache.IsDone(c) {
			return false
		}
	}
	return true
}

// Pending names the informers that have not synced yet.
func (b *InformerBarrier) Pending() []string {
	var out []string
	for _, c := range b.currentCheckers() {
		if !toolscache.IsDone(c) {
			out = append(out, c.Name())
		}
	}
	sort.Strings(out)
	return out
}

func (b *InformerBarrier) currentCheckers() []toolscache.DoneChecker {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.checkers)
}
