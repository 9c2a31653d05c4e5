package dbmode

import (
	"context"
	"net/http"
	"testing"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/kongstate"
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
	// Kong's validator refuses the plugin before anything is written (validate.go), so a
	// change of the Ingress made together with the bad plugin does not reach Kong either.
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

// A new Ingress with a new auth plugin Kong refuses must never reach Kong without that plugin:
// its route would be open without authentication. The plugin is validated against Kong's
// schema before anything is written, so the Ingress is left out from the first request on.
func TestNewIngressWithRefusedAuthPluginIsNeverOpen(t *testing.T) {
	e, g := newKong(t, Options{Concurrency: 1})
	objs := objects(apps(3)...)
	require.NoError(t, g.Sync(ctx, translated(t, objs)))
	mark := e.AuditMark()

	objs = objects(apps(4)...)
	objs[9].SetAnnotations(map[string]string{"konghq.com/plugins": "auth"}) // app-00003's Ingress
	objs = append(objs, &kongv1.KongPlugin{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "auth", UID: "uid-auth"},
		PluginName: "key-auth", Config: apiextensionsv1.JSON{Raw: []byte(`{"hide_credentials":true}`)}})
	tgt := translated(t, objs)
	require.Len(t, tgt.State.Plugins, 1)
	// Edited after translation, which knows key-auth's schema: this stands for a field
	// konductor's copy of the schema does not know and Kong refuses.
	tgt.State.Plugins[0].Config["hide_credentials"] = "maybe"

	for range 3 { // every later sync too: the refused Ingress stays out
		err := g.Sync(ctx, tgt)
		var rej *dataplane.RejectedError
		require.ErrorAs(t, err, &rej)
		require.True(t, rej.RestApplied, "%v", err)
		require.Equal(t, map[string]bool{"auth": true}, refusedNames(rej))
	}
	for _, a := range e.AuditSince(mark) {
		ref, _ := kongstate.ObjectRefFromTags(a.Tags)
		require.False(t, ref.Kind == "Ingress" && ref.Name == "app-00003", "an entity of the Ingress of the refused auth plugin was written: %+v", a)
	}
	require.Len(t, e.Entities("routes"), 3)
	require.Empty(t, e.Entities("plugins"))
}

// A plugin Kong validates but refuses on its write (here an injected 400: a refusal the
// validator cannot foresee) comes after its new route was created in the same pass. The next
// pass deletes that route rather than keeping it: Kong holds for a refused object what it
// held before the sync, and before the sync it held no route for this Ingress.
func TestRouteCreatedBeforeItsRefusedPluginIsTakenBackOut(t *testing.T) {
	e, g := newKong(t, Options{Concurrency: 1})
	objs := objects(apps(3)...)
	require.NoError(t, g.Sync(ctx, translated(t, objs)))

	objs = objects(apps(4)...)
	objs[9].SetAnnotations(map[string]string{"konghq.com/plugins": "auth"}) // app-00003's Ingress
	objs = append(objs, &kongv1.KongPlugin{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "auth", UID: "uid-auth"},
		PluginName: "key-auth", Config: apiextensionsv1.JSON{Raw: []byte(`{"hide_credentials":true}`)}})
	e.InjectFault(kongemu.Fault{Method: http.MethodPut, PathPrefix: "/plugins", Count: 1, Status: http.StatusBadRequest})
	e.InjectFault(kongemu.Fault{Method: http.MethodPost, PathPrefix: "/plugins", Count: 1, Status: http.StatusBadRequest})
	mark := e.AuditMark()
	err := g.Sync(ctx, translated(t, objs))
	var rej *dataplane.RejectedError
	require.ErrorAs(t, err, &rej)
	require.True(t, rej.RestApplied, "%v", err)
	require.Equal(t, map[string]bool{"auth": true}, refusedNames(rej))

	var created, deleted bool
	for _, a := range e.AuditSince(mark) {
		if ref, _ := kongstate.ObjectRefFromTags(a.Tags); ref.Kind == "Ingress" && ref.Name == "app-00003" {
			created = created || a.Method != http.MethodDelete
		}
		if a.Method == http.MethodDelete && a.Entity == "routes" {
			deleted = true
		}
	}
	require.True(t, created, "the first pass creates the route before the plugin, as go-database-reconciler orders them")
	require.True(t, deleted, "the route of the refused object is taken back out")
	require.Nil(t, e.Entity("routes", "default.app-00003.app-00003.app-00003.example.com.80"))
	require.Len(t, e.Entities("routes"), 3)
}
