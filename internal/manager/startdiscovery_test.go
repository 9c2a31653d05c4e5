package manager

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/store"
)

// Kong's kinds the cluster serves and konductor does not read are named once each, sorted.
func TestUntranslatedKongKinds(t *testing.T) {
	served := []string{"KongPlugin", "KongUpstream", "KongIngress", "KongPlugin", "KongDataPlaneClientCertificate", "KongUpstream"}
	read := store.KindSet{store.KindKongPlugin: {}, store.KindKongIngress: {}}
	require.Equal(t, []string{"KongDataPlaneClientCertificate", "KongUpstream"}, untranslatedKongKinds(served, read))
	require.Empty(t, untranslatedKongKinds(nil, read))
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
