package manager

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

var secretGVK = store.KindSecret.GroupVersionKind()

// secretReferenced tells whether an object of graph refers to the Secret namespace/name.
func secretReferenced(graph *objgraph.Graph) func(namespace, name string) bool {
	return func(namespace, name string) bool {
		ref := kongstate.ObjectRef{Group: secretGVK.Group, Version: secretGVK.Version, Kind: secretGVK.Kind, Namespace: namespace, Name: name}
		return len(graph.ReferredBy(ref)) > 0
	}
}

// translateWithPayloads translates s; when that translation refers to Secrets whose data the
// cache does not hold (store.SecretPayloads: nothing referred to them when they were cached),
// it loads them from the API server and translates again, so that the round's result has
// them. Until then they are absent from the snapshot, never empty: if they cannot be read,
// the first result stands, as if those Secrets did not exist yet, and the next round tries
// again.
func translateWithPayloads(ctx context.Context, payloads *store.SecretPayloads, s *store.Snapshot,
	build func(*store.Snapshot) translator.Result, log logr.Logger) translator.Result {
	res := build(s)
	if len(s.SecretsPending) == 0 || res.Graph == nil {
		return res
	}
	referenced := secretReferenced(res.Graph)
	complete, err := payloads.Complete(ctx, s, referenced)
	if err != nil {
		log.Error(err, "cannot read referenced Secrets that the cache keeps without their data; they count as missing until the next round")
		return res
	}
	if complete == nil {
		return res
	}
	if debug := log.V(1); debug.Enabled() {
		for _, held := range complete.SecretsPending {
			if referenced(held.Namespace, held.Name) {
				// Where a change can stop too (docs/troubleshooting.md): its event, which
				// brings it whole now that it is referenced, makes the next round.
				debug.Info("Secret held: referenced, but changed or gone since it was cached without its data; it counts as missing until its next event",
					"namespace", held.Namespace, "name", held.Name)
			}
		}
	}
	return build(complete)
}

// newInformerPagingSecrets is the cache's informer constructor: client-go's, with the Secrets'
// lists read in pages whose Secrets go through transform (the cache's, which drops the data
// of unreferenced Secrets) page by page (store.PagedList). Without it the first list of the
// Secrets held every Secret's data at once, however few of them translation reads.
func newInformerPagingSecrets(transform toolscache.TransformFunc) func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer {
	return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		if _, ok := obj.(*corev1.Secret); ok {
			lw = store.PagedList(lw, store.SecretListPageSize, transform)
		}
		return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
	}
}
