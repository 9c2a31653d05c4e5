package dataplane

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// Fallback configuration (KIC's FallbackConfiguration gate, translation-rules.md §12.3; on by default
// in konductor).
//
// A DB-less gateway refuses a configuration whole: one KongPlugin Kong finds invalid would
// keep every later change of every other object away from it. When a gateway refuses a
// configuration and names entities whose tags lead to Kubernetes objects, the loop leaves
// those objects out of the round's snapshot together with every object that depends on them
// (objgraph.Graph.Broken: a broken KongPlugin takes the Ingresses and Services that use it,
// and the Ingresses of those Services; what the broken object depends on stays, and so does
// an object that only shares a value with it, such as an Ingress that asked for the route
// name it holds, which then gets it, as in KIC), translates that snapshot again and sends the
// result. With UseLastValidConfigForFallback the objects left out are taken from the last
// snapshot a gateway accepted instead, where they exist there.
//
// If the fallback is refused too, the objects it names are left out as well, up to
// maxFallbackPasses; when nothing more can be isolated the gateway keeps its last good
// configuration (the DB-less gateway never loses it: Kong keeps what it had on a 400). A
// fallback that leaves nothing at all is only sent to a gateway that holds nothing
// (ErrFallbackLeavesNothing).
const maxFallbackPasses = 3

// ErrFallbackLeavesNothing is a fallback's Err when its configuration holds no entity (every
// object was refused or depends on one) and the gateway holds a configuration: it is not
// sent, and the gateway keeps what it holds. KIC sends it all the same (the stub upstream
// alone in DB-less mode), which takes every route the gateway served; to a gateway that holds
// nothing (a fresh Kong) konductor sends it too, as KIC does, so that Kong holds a
// configuration and reports ready. The gateway is not retried with backoff: the same round
// would leave nothing again; a change of the objects makes a new round.
var ErrFallbackLeavesNothing = errors.New("the fallback configuration leaves nothing: the gateway keeps the configuration it holds")

// ConfigurationHolder is a Gateway that can say whether it holds a configuration that t would
// replace, before t is sent: a DB-less gateway (DBLessGateway, and a DetectingGateway that
// detected one). The loop asks it before sending a fallback configuration that holds no
// entity (ErrFallbackLeavesNothing). A database-backed gateway does not implement it and its
// behaviour stays as it was: it never gets there anyway, since it applies all but the refused
// objects itself (RejectedError.RestApplied) and no fallback is made for it.
type ConfigurationHolder interface {
	// HoldsOtherConfiguration reports whether the gateway holds a configuration other than
	// t's (false when it holds nothing, or t's configuration itself: sending t then takes
	// nothing from it).
	HoldsOtherConfiguration(ctx context.Context, t *Target) (bool, error)
}

// leavesNothing reports whether sending t, a fallback configuration, to g would replace the
// configuration g holds with one without any entity; an error when g could not tell.
func leavesNothing(ctx context.Context, g Gateway, t *Target) (bool, error) {
	if !t.State.Empty() {
		return false, nil
	}
	h, ok := g.(ConfigurationHolder)
	if !ok {
		return false, nil // database mode: as before (see ConfigurationHolder)
	}
	holds, err := h.HoldsOtherConfiguration(ctx, t)
	if err != nil {
		return false, fmt.Errorf("asking whether gateway %s holds a configuration: %w", g.URL(), err)
	}
	return holds, nil
}

// FallbackResult is what a fallback did on one gateway.
type FallbackResult struct {
	// Broken are the objects the gateway refused, sorted.
	Broken []kongstate.ObjectRef
	// Excluded are the objects left out of the snapshot: Broken and their dependents,
	// sorted.
	Excluded []kongstate.ObjectRef
	// Backfilled are the excluded objects taken from the last accepted snapshot instead.
	Backfilled []kongstate.ObjectRef
	// Problems are the fallback translation's own problems.
	Problems []translator.Problem
	// Err is nil when the gateway took the fallback configuration; else why not (a
	// *RejectedError when it refused that too).
	Err error

	// For metrics: how long the fallback syncs took, the size of the last fallback
	// configuration sent, in bytes, and the fallback translations this gateway's sync made
	// (a plan already made for another gateway of the round is not counted again).
	Duration     time.Duration
	Size         int
	Translations []FallbackTranslation
}

// FallbackTranslation is one translation of a fallback snapshot.
type FallbackTranslation struct {
	Duration time.Duration
	// Problems are its translation problems (objects left out or degraded).
	Problems []translator.Problem
	// CacheGeneration is how long building the fallback snapshot took (leaving the objects
	// out, filling them back in from the last accepted snapshot), before its translation:
	// KIC's fallback cache generation. It cannot fail.
	CacheGeneration time.Duration
}

// fallbackPlan is one fallback configuration, shared by every gateway that refused the same
// objects in the same round.
type fallbackPlan struct {
	translation FallbackTranslation
	target      *Target
	snapshot    *store.Snapshot
	excluded    []kongstate.ObjectRef
	backfilled  []kongstate.ObjectRef
}

// fallbacks builds the fallback configurations of one round's target, once per set of broken
// objects, whatever the number of gateways that need it.
type fallbacks struct {
	translate TranslateFunc
	snapshot  *store.Snapshot
	graph     *objgraph.Graph
	lastValid *store.Snapshot // nil: leave objects out, do not backfill
	clock     clock.PassiveClock

	mu    sync.Mutex
	plans map[string]*fallbackPlan
}

// plan returns the fallback configuration without broken and their dependents, and whether
// this call built it (the first for these objects).
func (f *fallbacks) plan(broken []kongstate.ObjectRef) (*fallbackPlan, bool) {
	key := refsKey(broken)
	f.mu.Lock()
	defer f.mu.Unlock()
	if p := f.plans[key]; p != nil {
		return p, false
	}
	out := map[kongstate.ObjectRef]bool{}
	for _, r := range f.graph.Broken(broken...) {
		out[r] = true
	}
	isExcluded := func(gvk schema.GroupVersionKind, obj client.Object) bool {
		return out[objgraph.Key(kongstate.RefFor(obj, gvk))]
	}
	var excluded, backfilled []kongstate.ObjectRef
	// Building the fallback snapshot is KIC's fallback cache generation (its
	// generateFallbackCache): timed apart from the translation for its metric.
	generationStart := f.now()
	snap := f.snapshot.Select(func(gvk schema.GroupVersionKind, obj client.Object) bool {
		if isExcluded(gvk, obj) {
			excluded = append(excluded, kongstate.RefFor(obj, gvk))
			return false
		}
		return true
	})
	sortRefs(excluded)
	if f.lastValid != nil {
		fill := f.lastValid.Select(isExcluded)
		fill.Select(func(gvk schema.GroupVersionKind, obj client.Object) bool {
			backfilled = append(backfilled, kongstate.RefFor(obj, gvk))
			return false
		})
		snap = snap.Union(fill)
	}
	sortRefs(backfilled)
	start := f.now()
	generation := start.Sub(generationStart)
	res := f.translate(snap)
	p := &fallbackPlan{
		translation: FallbackTranslation{Duration: f.now().Sub(start), Problems: res.Problems, CacheGeneration: generation},
		target:      newTarget(res, snap, nil, nil),
		snapshot:    snap, excluded: excluded, backfilled: backfilled,
	}
	if f.plans == nil {
		f.plans = map[string]*fallbackPlan{}
	}
	f.plans[key] = p
	return p, true
}

func (f *fallbacks) now() time.Time {
	if f.clock == nil {
		return time.Now()
	}
	return f.clock.Now()
}

// brokenObjects lists the objects a refusal names, once each (entities whose tags lead to no
// object are not isolable).
func brokenObjects(rej *RejectedError) []kongstate.ObjectRef {
	seen := map[kongstate.ObjectRef]bool{}
	var out []kongstate.ObjectRef
	for _, e := range rej.Entities {
		if e.Object.Name == "" {
			continue
		}
		if n := objgraph.Key(e.Object); !seen[n] {
			seen[n] = true
			out = append(out, e.Object)
		}
	}
	sortRefs(out)
	return out
}

// refusal is err as a whole-configuration refusal by a gateway (not one that applied the
// rest, as database mode does), or nil.
func refusal(err error) *RejectedError {
	var rej *RejectedError
	if errors.As(err, &rej) && !rej.RestApplied {
		return rej
	}
	return nil
}

func sortRefs(refs []kongstate.ObjectRef) {
	sort.Slice(refs, func(i, j int) bool { return refs[i].String()+refs[i].Group < refs[j].String()+refs[j].Group })
}

// refsKey names a set of objects by graph node (UID and version left out).
func refsKey(refs []kongstate.ObjectRef) string {
	parts := make([]string, len(refs))
	for i, r := range refs {
		parts[i] = r.Group + "/" + r.Kind + "/" + r.Namespace + "/" + r.Name
	}
	sort.Strings(parts)
	return strings.Join(parts, "\x00")
}
