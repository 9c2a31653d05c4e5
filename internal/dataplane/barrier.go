package dataplane

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
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

	// Each informer, those of the start and those added later (AddLateInformer), has one
	// listener of the barrier's: fan, which hands each event to the handlers added before
	// Seal. A handler added after that is registered on each informer itself
	// (direct), so that the informer replays its objects to it as client-go does. The barrier
	// does not wait for late informers (their owner publishes their kind once synced).
	mu     sync.Mutex
	sealed bool // Seal was called: the informers may be running
	fan    handlerFanOut
	direct []toolscache.ResourceEventHandler
	late   []cache.Informer
}

// handlerFanOut is one informer listener serving many event handlers, in the order they were
// added. client-go gives each registered handler a listener of its own: a ring buffer of
// 1,024 events (16 KB) that never shrinks, and two goroutines; with a handler per concern
// (the loop's trigger, the Gateway API status, the admission webhook) on each of the
// barrier's 30-odd informers that was about a hundred listeners (issue #13, memory). The
// handlers are cheap and never block (they note keys and wake loops), so one goroutine per
// informer calling them in turn delays none of them noticeably.
type handlerFanOut struct {
	handlers atomic.Pointer[[]toolscache.ResourceEventHandler]
}

func (f *handlerFanOut) add(h toolscache.ResourceEventHandler) {
	var hs []toolscache.ResourceEventHandler
	if cur := f.handlers.Load(); cur != nil {
		hs = slices.Clip(*cur)
	}
	hs = append(hs, h)
	f.handlers.Store(&hs)
}

func (f *handlerFanOut) each(do func(toolscache.ResourceEventHandler)) {
	if hs := f.handlers.Load(); hs != nil {
		for _, h := range *hs {
			do(h)
		}
	}
}

func (f *handlerFanOut) OnAdd(obj any, isInInitialList bool) {
	f.each(func(h toolscache.ResourceEventHandler) { h.OnAdd(obj, isInInitialList) })
}

func (f *handlerFanOut) OnUpdate(oldObj, newObj any) {
	f.each(func(h toolscache.ResourceEventHandler) { h.OnUpdate(oldObj, newObj) })
}

func (f *handlerFanOut) OnDelete(obj any) {
	f.each(func(h toolscache.ResourceEventHandler) { h.OnDelete(obj) })
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
		if _, err := inf.AddEventHandler(&b.fan); err != nil {
			return nil, fmt.Errorf("registering the event handlers of %T: %w", obj, err)
		}
		b.informers = append(b.informers, inf)
		b.checkers = append(b.checkers, namedChecker{inf.HasSyncedChecker(), fmt.Sprintf("%T", obj)})
	}
	return b, nil
}

// AddEventHandler adds h to every informer the barrier waits for: the same set of kinds is
// both what a sync waits for and what triggers one. Before Seal (the controller adds its
// handlers while it is assembled) h joins the barrier's one listener per informer; after, it
// is registered on each, so that it is told of the objects already there.
func (b *InformerBarrier) AddEventHandler(h toolscache.ResourceEventHandler) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.sealed {
		b.fan.add(h)
		return nil
	}
	for _, inf := range append(slices.Clip(b.informers), b.late...) {
		if _, err := inf.AddEventHandler(h); err != nil {
			return err
		}
	}
	b.direct = append(b.direct, h)
	return nil
}

// Seal tells the barrier its informers are about to start (the controller calls it before
// it starts the manager): from then on a handler is registered on each informer itself, so
// that it is told of the objects already there. The informers themselves cannot say it:
// controller-runtime's informers of several namespaces (--watch-namespace) do not tell whether
// they run, and one could start between the question and the handler joining the fan.
func (b *InformerBarrier) Seal() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sealed = true
}

// AddLateInformer gives an informer registered after start (the kind of a CRD installed
// meanwhile) every event handler of the barrier. The barrier does not wait for it: whoever
// added it lets the store read its kind only after it synced.
func (b *InformerBarrier) AddLateInformer(inf cache.Informer) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, h := range append([]toolscache.ResourceEventHandler{&b.fan}, b.direct...) {
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
