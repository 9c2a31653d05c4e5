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
	for _, o := range objs {
		if o == nil {
			return nil, fmt.Errorf("nil object")
		}
	}
	reader := b.WithObjects(objs...).Build()
	if opts.Kinds == nil {
		opts.Kinds = NewKindSet(AllKinds()...)
	}
	return New(reader, opts), nil
}
