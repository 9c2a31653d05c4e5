package status

import (
	"context"
	"sync"

	"github.com/go-logr/logr"
	kongv1alpha1 "github.com/kong/kubernetes-configuration/api/configuration/v1alpha1"
	kongv1beta1 "github.com/kong/kubernetes-configuration/api/configuration/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/store"
)

// runner is what every status writer shares: a leader-only runnable (invariant 7) that runs
// update when a round asks for it, apart from the sync loop, so that status writes never
// delay a sync. Requests made while an update runs are one more update.
type runner struct {
	name    string
	trigger *dataplane.Trigger
	log     logr.Logger
	update  func(context.Context) error
}

// statusWriter is how every status updater writes: each write of an object's status
// subresource first waits while the sync loop has a sync pending or running (its SyncGate),
// at most the gate's MaxWait in all while one stays in flight, so that status writes (a
// fresh leader's thousands, a route change's Gateway and route entries) never take the CPU
// and the API server's attention a sync needs (issue #13). Without a gate it does not wait.
type statusWriter struct {
	client client.Client
	syncs  *dataplane.SyncGate
	// updateOnly holds the kinds (GroupKind strings) whose status may not be patched: KIC's
	// ClusterRole grants only update on the Gateway API kinds' status, and a KIC installation's
	// role must be enough (issue #30). Their status is then written whole with Update.
	updateOnly sync.Map
}

// GatedWriter is a status updater whose writes wait at the sync loop's gate once it has it:
// the manager hands the loop's gate to every reporter that is one.
type GatedWriter interface {
	WaitForSyncs(*dataplane.SyncGate)
}

var (
	_ GatedWriter = (*IngressUpdater)(nil)
	_ GatedWriter = (*GatewayAPIUpdater)(nil)
	_ GatedWriter = (*ProgrammedUpdater)(nil)
)

// WaitForSyncs makes the updater's status writes wait at the sync loop's gate.
func (w *statusWriter) WaitForSyncs(g *dataplane.SyncGate) { w.syncs = g }

// writeStatus patches obj's status once the sync loop's gate lets it.
//
// When the role forbids patch but obj is whole (read from the cache, with its
// resourceVersion), the status is written with Update instead, as KIC writes it; a conflict
// then fails the write like an optimistic-lock patch's, and the next pass writes again.
func (w *statusWriter) writeStatus(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	w.syncs.Wait(ctx)
	if read, older := store.AsRead(obj); older {
		// A kind the cluster serves only at an older version (store.Versions): the status
		// goes back in the version read, the patch holding what it holds for obj.
		obj, patch = read, store.PatchAsRead(patch, obj)
	}
	whole := obj.GetResourceVersion() != ""
	kind := ""
	if gvk, err := apiutil.GVKForObject(obj, w.client.Scheme()); err == nil {
		kind = gvk.GroupKind().String()
	}
	if _, denied := w.updateOnly.Load(kind); denied && whole {
		return w.client.Status().Update(ctx, obj)
	}
	err := w.client.Status().Patch(ctx, obj, patch, opts...)
	if apierrors.IsForbidden(err) && whole && kind != "" {
		w.updateOnly.Store(kind, true)
		return w.client.Status().Update(ctx, obj)
	}
	return err
}

// writeStatusRetrying writes the status desired gives obj, with its resourceVersion, so that
// an entry another controller wrote meanwhile (or our own previous write the cache has not seen
// yet) is not overwritten: on a conflict the object is read again from reader (the API server)
// and desired asked again. desired returns nil when nothing is to be written; an object gone
// meanwhile is nothing to write.
func (w *statusWriter) writeStatusRetrying(ctx context.Context, reader client.Reader, obj client.Object, empty func() client.Object, desired func(current client.Object) client.Object) error {
	current := obj
	first := true
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			fresh := empty()
			// At the version obj was read at (store.GetAsRead), converted as the store does.
			if err := store.GetAsRead(ctx, reader, obj, fresh); err != nil {
				if apierrors.IsNotFound(err) {
					return nil
				}
				return err
			}
			current = fresh
		}
		first = false
		updated := desired(current)
		if updated == nil {
			return nil
		}
		err := w.writeStatus(ctx, updated, client.MergeFromWithOptions(current, client.MergeFromWithOptimisticLock{}))
		if apierrors.IsNotFound(err) {
			return nil // deleted meanwhile: nothing to write
		}
		return err
	})
}

func newRunner(name string, log logr.Logger, update func(context.Context) error) runner {
	return runner{name: name, trigger: dataplane.NewTrigger(), log: log, update: update}
}

// NeedLeaderElection: only the leader writes object status.
func (r *runner) NeedLeaderElection() bool { return true }

// Start runs updates until ctx ends.
func (r *runner) Start(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.trigger.C():
			if err := r.update(ctx); err != nil && ctx.Err() == nil {
				r.log.Error(err, "updating "+r.name)
			}
		}
	}
}

// gvkOf is the kind of a typed object (objects read through a client carry no TypeMeta).
func gvkOf(o client.Object) schema.GroupVersionKind {
	gvk, _ := apiutil.GVKForObject(o, store.Scheme())
	return gvk
}

func consumerGroupConditions(o client.Object) *[]metav1.Condition {
	return &o.(*kongv1beta1.KongConsumerGroup).Status.Conditions
}

func vaultConditions(o client.Object) *[]metav1.Condition {
	return &o.(*kongv1alpha1.KongVault).Status.Conditions
}

func customEntityConditions(o client.Object) *[]metav1.Condition {
	return &o.(*kongv1alpha1.KongCustomEntity).Status.Conditions
}
