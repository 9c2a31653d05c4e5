package dbmode

import (
	"context"
	"testing"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// translated is a Target with the object graph, as the loop makes it.
func translated(t *testing.T, objs []client.Object) *dataplane.Target {
	t.Helper()
	st, err := store.NewForObjects(objs, store.Options{})
	require.NoError(t, err)
	snap, err := st.Snapshot(context.Background())
	require.NoError(t, err)
	res := translator.Build(snap, translator.Options{})
	return &dataplane.Target{State: res.State, Problems: res.Problems, Graph: res.Graph}
}

// A KongPlugin Kong refuses takes the Ingress that uses it out too (the object graph, as a
// DB-less fallback does): Kong keeps what it held for both, the other Ingresses sync.
func TestRefusedPluginTakesItsIngressOut(t *testing.T) {
	e, g := newKong(t, Options{Concurrency: 1})
	objs := objects(apps(3)...)
	require.NoError(t, g.Sync(ctx, translated(t, objs)))

	// app-00001 gets a rate-limiting plugin whose configuration Kong refuses (edited into the
	// State after translation, which would leave it out), and app-00003 appears.
	//
	// What this does not show: the first pass of a sync writes everything up to Kong's
	// refusal, in go-database-reconciler's order (routes before plugins), so a change of the
	// Ingress itself made together with the bad plugin reaches Kong in that pass; later
	// passes keep the excluded objects as Kong holds them.
	objs = objects(apps(4)...)
	objs[3].SetAnnotations(map[string]string{"konghq.com/plugins": "custom"})
	objs = append(objs, &kongv1.KongPlugin{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "custom", UID: "uid-custom"},
		PluginName: "rate-limiting", Config: apiextensionsv1.JSON{Raw: []byte(`{"minute":5}`)}})
	tgt := translated(t, objs)
	bad := 0
	for _, p := range tgt.State.Plugins {
		p.Config["minute"] = "abc"
		bad++
	}
	require.Equal(t, 1, bad)
	err := g.Sync(ctx, tgt)
	var rej *dataplane.RejectedError
	require.ErrorAs(t, err, &rej)
	require.True(t, rej.RestApplied, "%v", err)
	require.Equal(t, map[string]bool{"custom": true}, refusedNames(rej))
	var excluded []string
	for _, x := range rej.Excluded {
		excluded = append(excluded, x.String())
	}
	require.Equal(t, []string{"Ingress default/app-00001", "KongPlugin default/custom"}, excluded)

	require.Len(t, e.Entities("routes"), 4, "app-00003 was created")
	require.Empty(t, e.Entities("plugins"))
	require.NotNil(t, e.Entity("routes", "default.app-00001.app-00001.app-00001.example.com.80"), "its route stays")
}
