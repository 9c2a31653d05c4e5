package manager

import (
	"context"
	"slices"
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

// payloadReferenced tells whether translation needs the data of an object of graph: a
// Secret any object refers to, a ConfigMap a BackendTLSPolicy refers to (its CA
// certificate; any other ConfigMap is read only when labelled, as in KIC).
func payloadReferenced(graph *objgraph.Graph) store.Referenced {
	return func(k store.Kind, namespace, name string) bool {
		gvk := k.GroupVersionKind()
		ref := kongstate.ObjectRef{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: namespace, Name: name}
		referrers := graph.ReferredBy(ref)
		if k == store.KindConfigMap {
			return slices.ContainsFunc(referrers, func(r kongstate.ObjectRef) bool { return r.Kind == backendTLSPolicyKind })
		}
		return len(referrers) > 0
	}
}

var backendTLSPolicyKind = store.KindBackendTLSPolicy.GroupVersionKind().Kind

// translateWithPayloads translates s; when that translation refers to Secrets whose data the
// cache does not hold (store.SecretPayloads: nothing referred to them when they were cached),
// it loads them from the API server and translates again, so that the round's result has
// them. Until then they are absent from the snapshot, never empty: if they cannot be read,
// the first result stands, as if those Secrets did not exist yet, and the next round tries
// again.
func translateWithPayloads(ctx context.Context, payloads *store.SecretPayloads, s *store.Snapshot,
	build func(*store.Snapshot) translator.Result, log logr.Logger) translator.Result {
	res := build(s)
	if len(s.SecretsPending)+len(s.ConfigMapsPending) == 0 || res.Graph == nil {
		return res
	}
	referenced := payloadReferenced(res.Graph)
	complete, err := payloads.Complete(ctx, s, referenced)
	if err != nil {
		log.Error(err, "cannot read referenced Secrets or ConfigMaps that the cache keeps without their data; they count as missing until the next round")
		return res
	}
	if complete == nil {
		return res
	}
	if debug := log.V(1); debug.Enabled() {
		for _, held := range complete.SecretsPending {
			if referenced(store.KindSecret, held.Namespace, held.Name) {
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
		switch obj.(type) {
		case *corev1.Secret, *corev1.ConfigMap: // both cached whole, their data dropped
			lw = store.PagedList(lw, store.SecretListPageSize, transform)
		}
		return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
	}
}
