package dataplane

import (
	"crypto/sha256"
	"sync"
	"testing"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/translator"
)

// A target's digest is that of its declarative configuration, computed once for every
// caller (the standby, Prepare, each database-backed gateway), concurrent ones included
// (run with -race).
func TestConfigDigestIsTheConfigurationsComputedOnce(t *testing.T) {
	s := &kongstate.State{}
	s.Upstreams = append(s.Upstreams, &file.FUpstream{Upstream: kong.Upstream{Name: kong.String("a.default.80.svc")}})
	tgt := NewTarget(translator.Result{State: s}, &kongstate.Renderer{})

	digests := make([][sha256.Size]byte, 4)
	var wg sync.WaitGroup
	for i := range digests {
		wg.Go(func() {
			d, err := tgt.ConfigDigest()
			require.NoError(t, err)
			digests[i] = d
		})
	}
	wg.Wait()
	cfg, err := tgt.DeclarativeConfig()
	require.NoError(t, err)
	require.Contains(t, string(cfg), "a.default.80.svc")
	for _, d := range digests {
		require.Equal(t, sha256.Sum256(cfg), d)
	}

	// Computed once: a configuration changed under the target (it never is) is not hashed again.
	tgt.config = []byte("something else")
	d, err := tgt.ConfigDigest()
	require.NoError(t, err)
	require.Equal(t, sha256.Sum256(cfg), d)
}
