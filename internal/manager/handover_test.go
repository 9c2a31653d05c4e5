package manager

import (
	"testing"

	"github.com/stretchr/testify/require"
	netv1 "k8s.io/api/networking/v1"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
	"github.com/konductor/konductor/internal/translator/benchdata"
)

// The standby translates its cache with the round translator and renderer the loop takes
// over on the lease; the loop's first round after the handover translates only what changed
// since the standby's last period, and gives exactly what a fresh full build and render
// give for the new snapshot (the configuration in both forms, the problems; translator.TestIncrementalMatchesBuild compares the rest).
func TestRoundTranslatorHandsTheStandbysTranslationToTheLoop(t *testing.T) {
	rounds := &handover{}
	renderer := &rounds.renderer
	opts := translator.Options{}

	// The standby's periods: a full translation first, then the same snapshot again.
	standbySnap := benchdata.Snapshot(60)
	_, full, _ := rounds.build(standbySnap, opts)
	require.True(t, full, "the standby's first period translates everything")
	res, full, _ := rounds.build(standbySnap, opts)
	require.False(t, full)
	_, err := dataplane.NewTarget(res, renderer).DeclarativeConfig()
	require.NoError(t, err)
	_, err = dataplane.NewTarget(res, renderer).DBLessBody()
	require.NoError(t, err)

	// Between the standby's last period and the lease, one Ingress changed.
	leaderSnap := changedIngress(standbySnap, 17, "/moved")
	got, full, reason := rounds.build(leaderSnap, opts)
	require.False(t, full, "the loop's first round is incremental (%s)", reason)
	want := translator.Build(leaderSnap, opts)

	gotTarget, wantTarget := dataplane.NewTarget(got, renderer), dataplane.NewTarget(want, &kongstate.Renderer{})
	gotCfg, err := gotTarget.DeclarativeConfig()
	require.NoError(t, err)
	wantCfg, err := wantTarget.DeclarativeConfig()
	require.NoError(t, err)
	require.Equal(t, string(wantCfg), string(gotCfg))
	require.Contains(t, string(gotCfg), "/moved")
	gotBody, err := gotTarget.DBLessBody()
	require.NoError(t, err)
	wantBody, err := wantTarget.DBLessBody()
	require.NoError(t, err)
	require.Equal(t, wantBody.String(), gotBody.String())
	require.Equal(t, want.Problems, got.Problems)
}

// changedIngress returns snap with its i-th Ingress's first path changed (a new object
// version, as the cache would hold after an update).
func changedIngress(snap *store.Snapshot, i int, path string) *store.Snapshot {
	out := *snap
	out.Ingresses = append([]*netv1.Ingress(nil), snap.Ingresses...)
	ing := snap.Ingresses[i].DeepCopy()
	ing.ResourceVersion = "2"
	ing.Spec.Rules[0].HTTP.Paths[0].Path = path
	out.Ingresses[i] = ing
	return &out
}
