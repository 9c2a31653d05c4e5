package store

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// NewForObjects returns a store over an in-memory reader holding objs, for `konductor
// translate` and for tests: the same Snapshot code reads them as reads the manager's cache.
// Every optional kind is enabled, since no cluster says otherwise.
func NewForObjects(objs []client.Object, opts Options) (*Store, error) {
	b := fake.NewClientBuilder().WithScheme(Scheme())
	held := make([]client.Object, len(objs))
	for i, o := range objs {
		if o == nil {
			return nil, fmt.Errorf("nil object")
		}
		held[i] = beingDeletedAsHeld(o)
	}
	reader := b.WithObjects(held...).Build()
	if opts.Kinds == nil {
		opts.Kinds = NewKindSet(AllKinds()...)
	}
	return New(reader, opts), nil
}

// readerFinalizer is the finalizer NewForObjects gives a copy of an object that is being
// deleted and has none (beingDeletedAsHeld).
const readerFinalizer = "konductor.dev/read-from-manifest"

// beingDeletedAsHeld is o as the in-memory reader can hold it: an object being deleted
// without finalizers (a Terminating Namespace in `kubectl get -o yaml`'s output, whose
// finalizers are in its spec) is refused by controller-runtime's fake client, with a panic,
// so its copy gets readerFinalizer; no translation reads finalizers. Others are o itself.
func beingDeletedAsHeld(o client.Object) client.Object {
	if o.GetDeletionTimestamp() == nil || len(o.GetFinalizers()) > 0 {
		return o
	}
	c, ok := o.DeepCopyObject().(client.Object)
	if !ok {
		return o
	}
	c.SetFinalizers([]string{readerFinalizer})
	return c
}
