package manager

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/konductor/konductor/internal/store"
)

// Kong's kinds the cluster serves and konductor does not read are named once each, sorted;
// those switched off on purpose (KongServiceFacade without its gate) are not.
func TestUntranslatedKongKinds(t *testing.T) {
	served := []string{"KongPlugin", "KongUpstream", "KongIngress", "KongPlugin", "KongDataPlaneClientCertificate", "KongUpstream", "KongServiceFacade"}
	read := store.KindSet{store.KindKongPlugin: {}, store.KindKongIngress: {}}
	require.Equal(t, []string{"KongDataPlaneClientCertificate", "KongUpstream"}, untranslatedKongKinds(served, read, store.NewKindSet(store.KindKongServiceFacade)))
	require.Empty(t, untranslatedKongKinds(nil, read, nil))
}

// Every group version is asked, each answer and error lands at its own index, and the
// questions are in flight together (the last one asked is answered only once all have been
// asked).
func TestEachGroupVersionAsksAllAtOnce(t *testing.T) {
	gvs := []string{"a/v1", "b/v1", "c/v1"}
	var asked atomic.Int32
	all := make(chan struct{})
	answers, errs := eachGroupVersion(gvs, func(gv string) (string, error) {
		if asked.Add(1) == int32(len(gvs)) {
			close(all)
		}
		<-all
		if gv == "b/v1" {
			return "", errors.New("b failed")
		}
		return "answer " + gv, nil
	})
	require.Equal(t, []string{"answer a/v1", "", "answer c/v1"}, answers)
	require.NoError(t, errs[0])
	require.EqualError(t, errs[1], "b failed")
	require.NoError(t, errs[2])
}

// recordingMapper answers every RESTMapping and records what was asked.
type recordingMapper struct {
	meta.RESTMapper
	mu    sync.Mutex
	asked []schema.GroupVersionKind
	err   error
}

func (m *recordingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.asked = append(m.asked, gk.WithVersion(versions[0]))
	return &meta.RESTMapping{}, m.err
}

// askMapper asks the CRDs' mapping (so that the mapper's discovery runs while the start asks
// its other questions) and hands its error on; mapKinds then asks every kind read, by the
// kind's own group version kind, and the CRDs'.
func TestAskMapperThenMapKinds(t *testing.T) {
	m := &recordingMapper{err: errors.New("away")}
	require.EqualError(t, <-askMapper(m), "away")
	require.Equal(t, []schema.GroupVersionKind{crdGVK}, m.asked)

	m = &recordingMapper{}
	require.NoError(t, <-askMapper(m))
	read := store.ReadKinds(store.KindSet{store.KindHTTPRoute: {}})
	require.NoError(t, mapKinds(m, read, nil))
	want := []schema.GroupVersionKind{crdGVK, crdGVK}
	for _, k := range read.Sorted() {
		want = append(want, k.GroupVersionKind())
	}
	require.Equal(t, want, m.asked)
}
