package dbmode

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"testing"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/kongstate"
)

// fillObjects are 23 Ingresses with their Services and endpoints, one more with a key-auth
// plugin, and a global plugin: units, a plugin on a unit's route, and a plugin of no unit.
func fillObjects() []client.Object {
	keyed := objects(app{name: "keyed"})
	for _, o := range keyed {
		o.SetUID(o.GetUID() + "-keyed")
	}
	keyed[0].SetAnnotations(map[string]string{"konghq.com/plugins": "auth"})
	return append(append(objects(apps(23)...), keyed...),
		&kongv1.KongPlugin{ObjectMeta: metav1.ObjectMeta{Name: "auth", Namespace: "default", UID: "uid-auth"},
			PluginName: "key-auth", Config: apiextensionsv1.JSON{Raw: []byte(`{}`)}},
		&kongv1.KongClusterPlugin{ObjectMeta: metav1.ObjectMeta{Name: "global-cors", UID: "uid-global",
			Labels:      map[string]string{"global": "true"},
			Annotations: map[string]string{"kubernetes.io/ingress.class": "kong"}},
			PluginName: "cors", Config: apiextensionsv1.JSON{Raw: []byte(`{}`)}})
}

// newFillingKong is a Kong and a Gateway that fills it in batches of 4 services and
// upstreams, and a Kong and a Gateway that diffs the whole target at once.
func newFillingKong(t *testing.T, opts Options) (filledKong *kongemu.Emulator, filling *Gateway, wholeKong *kongemu.Emulator, whole *Gateway) {
	filledKong, filling = newKong(t, opts)
	filling.fillBatch = 4
	wholeKong, whole = newKong(t, opts)
	whole.fillBatch = 0
	return filledKong, filling, wholeKong, whole
}

// held is what an emulator holds of the kinds a fill writes, each entity in JSON without
// Kong's timestamps, sorted: two Kongs given the same writes hold the same.
func held(t *testing.T, e *kongemu.Emulator) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	// The translation gives upstreams and targets no ID: Kong makes one. They are compared
	// without it, a target naming its upstream by name.
	upstreams := map[any]any{}
	for _, up := range e.Entities("upstreams") {
		upstreams[up["id"]] = up["name"]
	}
	for _, kind := range []string{"services", "routes", "plugins", "upstreams", "targets", "consumers", "keyauth_credentials"} {
		for _, ent := range e.Entities(kind) {
			delete(ent, "created_at")
			delete(ent, "updated_at")
			switch kind {
			case "upstreams":
				delete(ent, "id")
			case "targets":
				delete(ent, "id")
				ent["upstream"] = upstreams[ent["upstream"].(map[string]any)["id"]]
			}
			b, err := json.Marshal(ent)
			require.NoError(t, err)
			out[kind] = append(out[kind], string(b))
		}
		sort.Strings(out[kind])
	}
	return out
}

// Issue #45: a Kong that holds none of the services and upstreams is filled in batches, and
// ends holding exactly what a whole diff writes, with the same changes; the known state the
// fill leaves is what Kong holds (the same translation again changes nothing, and the next
// change is a patch). What the translation does not have (a consumer of ours) is deleted;
// what is not ours (an untagged service) is left alone.
func TestFillWritesWhatAWholeDiffWould(t *testing.T) {
	ef, filling, ew, whole := newFillingKong(t, knownOpts)
	for _, g := range []*Gateway{filling, whole} {
		for path, body := range map[string]string{
			"/services":  `{"id":"6ae88104-4b1f-44fd-a400-5a9fb73b04cd","name":"by-hand","host":"example.com"}`,
			"/consumers": `{"username":"gone","tags":["` + DefaultFilterTag + `"]}`,
		} {
			resp, err := http.Post(g.url+path, "application/json", bytes.NewBufferString(body))
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			require.Equal(t, http.StatusCreated, resp.StatusCode, path)
		}
	}
	var r rounds
	objs := fillObjects()
	s := r.translate(t, objs)
	require.Greater(t, len(s.Services), 3*filling.fillBatch, "several batches")
	require.NotEmpty(t, s.Plugins)

	res, err := filling.sync(ctx, target(s))
	require.NoError(t, err)
	require.True(t, res.Filled)
	ref, err := whole.sync(ctx, target(s))
	require.NoError(t, err)
	require.False(t, ref.Filled)
	require.Equal(t, changeSet(ref), changeSet(res))
	require.Contains(t, changeSet(res), "delete consumer gone")
	require.Equal(t, held(t, ew), held(t, ef))
	require.NotNil(t, ef.Entity("services", "by-hand"))
	require.Len(t, ef.Entities("routes"), 24)
	requireHoldsExactly(t, filling, s)

	again, err := filling.Apply(ctx, s)
	require.NoError(t, err)
	require.True(t, again.Known, "the fill left a known state")
	require.Zero(t, again.Total(), "the known state differs from Kong: %+v", again.Changes)

	ing := objs[3*5].DeepCopyObject().(client.Object) // app-00005's Ingress
	ing.SetAnnotations(map[string]string{"konghq.com/strip-path": "true"})
	objs[3*5] = ing
	next := r.translate(t, objs)
	res, err = filling.sync(ctx, target(next))
	require.NoError(t, err)
	require.True(t, res.Patched, "the change after a fill is a patch")
	require.Equal(t, []string{"update route default.app-00005.app-00005.app-00005.example.com.80"}, changeSet(res))
	requireHoldsExactly(t, filling, next)
}

// A Kong that holds services of ours is not filled: the whole diff (the takeover of a Kong
// another controller wrote, a restart).
func TestFillOnlyAnEmptyKong(t *testing.T) {
	_, g := newKong(t, Options{})
	g.fillBatch = 4
	s := translate(t, objects(apps(10)...))
	first := *s
	first.Services, first.Upstreams = s.Services[:1], s.Upstreams[:1]
	res, err := g.sync(ctx, target(&first))
	require.NoError(t, err)
	require.False(t, res.Filled, "one batch: nothing to split")
	res, err = g.sync(ctx, target(s))
	require.NoError(t, err)
	require.False(t, res.Filled, "Kong holds a service of ours")
	require.Equal(t, 4*9, res.Creates, "service, route, upstream and target of 9 Ingresses")
	requireHoldsExactly(t, g, s)
}

// A batch whose target cannot be built alone (a plugin naming a consumer, outside every
// unit, and a unit's route) ends the fill; the same pass diffs the whole target against what
// the fill wrote, and Kong ends holding what a whole diff writes.
func TestFillFallsBackToTheWholeTarget(t *testing.T) {
	ef, filling, ew, whole := newFillingKong(t, knownOpts)
	s := translate(t, objects(apps(20)...))
	consumer := &file.FConsumer{Consumer: kong.Consumer{ID: kong.String("5b1c0a6e-6a44-4b53-9a5e-7c1f2f0e0a01"),
		Username: kong.String("alice"), Tags: kong.StringSlice("k8s-name:alice", "k8s-namespace:default", "k8s-kind:KongConsumer")}}
	s.Consumers = append(s.Consumers, consumer)
	route := s.Services[13].Routes[0] // in the fourth batch
	s.Plugins = append(slices.Clone(s.Plugins), &file.FPlugin{Plugin: kong.Plugin{
		ID: kong.String("5b1c0a6e-6a44-4b53-9a5e-7c1f2f0e0a02"), Name: kong.String("rate-limiting"),
		Route: &kong.Route{ID: route.Name}, Consumer: &kong.Consumer{ID: consumer.ID},
		Config: kong.Configuration{"minute": 10}, Tags: route.Tags}})

	res, err := filling.sync(ctx, target(s))
	require.NoError(t, err)
	require.True(t, res.Filled)
	ref, err := whole.sync(ctx, target(s))
	require.NoError(t, err)
	require.Equal(t, changeSet(ref), changeSet(res))
	require.Equal(t, held(t, ew), held(t, ef))
	require.Len(t, ef.Entities("plugins"), 1)
	again, err := filling.Apply(ctx, s)
	require.NoError(t, err)
	require.Zero(t, again.Total(), "the known state differs from Kong: %+v", again.Changes)
}

// A plugin Kong's validator refuses, in a later batch: the fill stops before that batch's
// writes and the whole pass isolates its object, as a whole diff does; a write Kong refuses
// (a route's path) stops the fill at that batch, and the next pass dumps and diffs whole.
// Either way Kong ends holding what a whole diff leaves, and the same objects are named.
func TestFillRefusalsAreIsolatedAsByAWholeDiff(t *testing.T) {
	for _, c := range []struct {
		name  string
		spoil func(t *testing.T, s *kongstate.State)
	}{
		{"a plugin refused by the validator", func(_ *testing.T, s *kongstate.State) {
			for _, p := range s.Plugins {
				if p.Route != nil {
					p.Config["minute"] = "abc"
				}
			}
		}},
		{"a route refused on its create", func(t *testing.T, s *kongstate.State) { badPath(s, appIndex(t, s, "app-00017")) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ef, filling, ew, whole := newFillingKong(t, Options{Concurrency: 1})
			objs := objects(apps(20)...)
			objs[3*17].SetAnnotations(map[string]string{"konghq.com/plugins": "custom"})
			objs = append(objs, &kongv1.KongPlugin{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "custom", UID: "uid-custom"},
				PluginName: "rate-limiting", Config: apiextensionsv1.JSON{Raw: []byte(`{"minute":5}`)}})
			var rejs []*dataplane.RejectedError
			for _, g := range []*Gateway{filling, whole} {
				tgt := translated(t, objs)
				c.spoil(t, tgt.State)
				res, err := g.sync(ctx, tgt)
				require.Equal(t, g == filling, res.Filled)
				var rej *dataplane.RejectedError
				require.ErrorAs(t, err, &rej)
				require.True(t, rej.RestApplied, "%v", err)
				rejs = append(rejs, rej)
			}
			require.Equal(t, refusedNames(rejs[1]), refusedNames(rejs[0]))
			require.Equal(t, rejs[1].Excluded, rejs[0].Excluded)
			require.Equal(t, held(t, ew), held(t, ef))
			require.Len(t, ef.Entities("routes"), 19, "all but app-00017's")
		})
	}
}
