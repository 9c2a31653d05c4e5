package dbmode

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// knownOpts lets a sync diff against what Kong is known to hold for an hour.
var knownOpts = Options{DumpInterval: time.Hour}

// syncCounted syncs s and returns what the sync did and the GET requests it made.
func syncCounted(t *testing.T, e *kongemu.Emulator, g *Gateway, s *kongstate.State) (*Result, int) {
	t.Helper()
	before := e.RequestCount(http.MethodGet, "")
	res, err := g.sync(ctx, target(s))
	require.NoError(t, err)
	require.NotNil(t, res)
	return res, e.RequestCount(http.MethodGet, "") - before
}

// requireHoldsExactly checks, with a fresh Gateway's dump (a new leader's view), that Kong
// holds s: what the known state said Kong holds was true.
func requireHoldsExactly(t *testing.T, g *Gateway, s *kongstate.State) {
	t.Helper()
	fresh, err := New(g.url, nil, Options{})
	require.NoError(t, err)
	res, err := fresh.Diff(ctx, s)
	require.NoError(t, err)
	require.Zero(t, res.Total(), "a dump of Kong differs from the translation: %+v", res.Changes)
}

// handDelete deletes an entity by hand, as someone with the Admin API would.
func handDelete(t *testing.T, g *Gateway, path string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodDelete, g.url+path, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
}

// Issue #45: after the first sync, a change of one route costs that route's write and GET /,
// whatever the size of the configuration. Before, every sync listed all of Kong: its GETs
// grew with the cluster (one target list per upstream).
func TestChangeListsNothingWhenKongIsKnown(t *testing.T) {
	gets := map[int]int{}
	for _, n := range []int{50, 200} {
		e, g := newKong(t, knownOpts)
		as := apps(n)
		first, _ := syncCounted(t, e, g, translate(t, objects(as...)))
		require.False(t, first.Known, "the first sync lists Kong")

		as[7].path = "/changed"
		changed := translate(t, objects(as...))
		res, n1 := syncCounted(t, e, g, changed)
		require.True(t, res.Known)
		require.Equal(t, 1, res.Total(), "changes: %+v", res.Changes)
		require.Equal(t, []any{"/changed/", "~/changed$"}, routePaths(t, e.Entity("routes", routeName(as[7]))))
		gets[n] = n1

		// And back: the known state took Kong's answer to the update.
		as[7].path = ""
		res, _ = syncCounted(t, e, g, translate(t, objects(as...)))
		require.True(t, res.Known)
		require.Equal(t, 1, res.Total(), "changes: %+v", res.Changes)
		requireHoldsExactly(t, g, translate(t, objects(as...)))
	}
	require.Equal(t, gets[50], gets[200], "GETs of a one-route change by cluster size: %v", gets)
	require.LessOrEqual(t, gets[200], 2, "GETs of a one-route change: %v", gets)
}

func routeName(a app) string {
	return fmt.Sprintf("default.%s.%s.%s.example.com.80", a.name, a.name, a.name)
}

// Ingresses created and deleted against the known state, a new guarded route among them
// (parked, then pointed at its service by hand-made requests the syncer does not record):
// Kong then holds exactly the translation, and the known state says so (the next sync of the
// same translation changes nothing).
func TestKnownStateFollowsCreatesDeletesAndParking(t *testing.T) {
	e, g := newKong(t, knownOpts)
	as := apps(20)
	_, _ = syncCounted(t, e, g, translate(t, objects(as...)))

	guarded := objects(app{name: "guarded"})
	guarded[0].SetAnnotations(map[string]string{"konghq.com/plugins": "auth"})
	auth := &kongv1.KongPlugin{ObjectMeta: metav1.ObjectMeta{Name: "auth", Namespace: "default", UID: "uid-auth"},
		PluginName: "key-auth", Config: apiextensionsv1.JSON{Raw: []byte(`{}`)}}
	objs := append(append(objects(append(as[:5:5], as[6:]...)...), guarded...), auth) // app 5 deleted
	s := translate(t, objs)
	res, _ := syncCounted(t, e, g, s)
	require.True(t, res.Known)
	require.Positive(t, res.Creates)
	require.Positive(t, res.Deletes)
	require.Nil(t, e.Entity("services", parkingServiceName), "the parking service is deleted")

	// The same translation again (Apply: no digest to skip by) finds nothing to do against
	// the known state, and a dump agrees.
	res, err := g.Apply(ctx, translate(t, objs))
	require.NoError(t, err)
	require.True(t, res.Known)
	require.Zero(t, res.Total(), "changes: %+v", res.Changes)
	requireHoldsExactly(t, g, translate(t, objs))
}

// Each reason to doubt what is known makes the sync list Kong again (known.go).
func TestKnownStateFallsBackToADump(t *testing.T) {
	setup := func(t *testing.T) (*kongemu.Emulator, *Gateway, []app) {
		e, g := newKong(t, knownOpts)
		as := apps(10)
		_, _ = syncCounted(t, e, g, translate(t, objects(as...)))
		return e, g, as
	}

	t.Run("a new Gateway over a Kong that holds the configuration (start, takeover)", func(t *testing.T) {
		e, g, as := setup(t)
		fresh, err := New(g.url, nil, knownOpts)
		require.NoError(t, err)
		res, gets := syncCounted(t, e, fresh, translate(t, objects(as...)))
		require.False(t, res.Known)
		require.Greater(t, gets, len(as))
		require.Zero(t, res.Total(), "adopted with no change: %+v", res.Changes)
	})

	t.Run("after a failed sync", func(t *testing.T) {
		e, g, as := setup(t)
		as[3].path = "/fails"
		e.InjectFault(kongemu.Fault{Method: http.MethodPut, PathPrefix: "/routes", Status: http.StatusServiceUnavailable})
		_, err := g.sync(ctx, target(translate(t, objects(as...))))
		require.Error(t, err)
		e.ClearFaults()
		res, _ := syncCounted(t, e, g, translate(t, objects(as...)))
		require.False(t, res.Known)
		require.Equal(t, []any{"/fails/", "~/fails$"}, routePaths(t, e.Entity("routes", routeName(as[3]))))
	})

	t.Run("after a sync that Kong refused in part", func(t *testing.T) {
		e, g, as := setup(t)
		bad := translate(t, objects(as...))
		badPath(bad, appIndex(t, bad, as[4].name))
		_, err := g.sync(ctx, target(bad))
		var rej *dataplane.RejectedError
		require.ErrorAs(t, err, &rej)
		as[5].path = "/next"
		res, _ := syncCounted(t, e, g, translate(t, objects(as...)))
		require.False(t, res.Known)
	})

	t.Run("an Admin API error against the known state: the same sync lists Kong and completes", func(t *testing.T) {
		e, g, as := setup(t)
		// The route and its service deleted by hand: the known state still has both. The
		// update of the route (a PUT, which would create it again) names a service Kong no
		// longer has, which Kong refuses (400); the sync against a dump creates both.
		route := e.Entity("routes", routeName(as[2]))
		handDelete(t, g, "/routes/"+route["id"].(string))
		handDelete(t, g, "/services/"+route["service"].(map[string]any)["id"].(string))
		as[2].path = "/after"
		s := translate(t, objects(as...))
		before := dumps(e)
		res, err := g.sync(ctx, target(s))
		require.NoError(t, err)
		require.True(t, res.Known)
		require.Equal(t, 1, dumps(e)-before, "the sync started again from one dump")
		require.Equal(t, []any{"/after/", "~/after$"}, routePaths(t, e.Entity("routes", routeName(as[2]))))
		requireHoldsExactly(t, g, s)
		// That sync ended on a dump, which it keeps: the next one is known again.
		as[2].path = ""
		res, _ = syncCounted(t, e, g, translate(t, objects(as...)))
		require.True(t, res.Known)
	})

	t.Run("a refusal met against the known state is found again from a dump", func(t *testing.T) {
		e, g, as := setup(t)
		bad := translate(t, objects(as...))
		badPath(bad, appIndex(t, bad, as[6].name))
		as[1].path = "/fine"
		good := translate(t, objects(as...))
		badPath(good, appIndex(t, good, as[6].name))
		res, err := g.sync(ctx, target(good))
		var rej *dataplane.RejectedError
		require.ErrorAs(t, err, &rej)
		require.Equal(t, map[string]bool{as[6].name: true}, refusedNames(rej))
		require.True(t, res.Known)
		require.Equal(t, []any{"/fine/", "~/fine$"}, routePaths(t, e.Entity("routes", routeName(as[1]))))
		require.Equal(t, []any{"/"}, routePaths(t, e.Entity("routes", routeName(as[6]))), "the refused route keeps what Kong held")
	})

	t.Run("every DumpInterval, which repairs what others changed", func(t *testing.T) {
		e, g, as := setup(t)
		start := time.Now()
		g.now = func() time.Time { return start.Add(30 * time.Minute) }
		victim := routeName(as[8])
		handDelete(t, g, "/routes/"+e.Entity("routes", victim)["id"].(string))
		as[0].path = "/a"
		res, _ := syncCounted(t, e, g, translate(t, objects(as...)))
		require.True(t, res.Known, "within the interval the known state serves")
		require.Nil(t, e.Entity("routes", victim), "the known state cannot see a deletion by hand")

		// Past the interval the change still goes against the known state, and Kong is
		// listed in the background after it (refresh.go): the listing misses the route, so
		// the known state is forgotten and the next sync dumps and repairs.
		g.now = func() time.Time { return start.Add(time.Hour + time.Minute) }
		as[0].path = "/b"
		res, _ = syncCounted(t, e, g, translate(t, objects(as...)))
		require.True(t, res.Known, "the change does not wait for the listing")
		waitListed(t, g)
		as[0].path = "/c"
		res, _ = syncCounted(t, e, g, translate(t, objects(as...)))
		require.False(t, res.Known)
		require.NotNil(t, e.Entity("routes", victim), "the dump found the route missing and created it")
	})

	t.Run("twice DumpInterval with no listing that confirmed the known state", func(t *testing.T) {
		e, g, as := setup(t)
		start := time.Now()
		g.now = func() time.Time { return start.Add(2*time.Hour + time.Minute) }
		as[0].path = "/late"
		res, _ := syncCounted(t, e, g, translate(t, objects(as...)))
		require.False(t, res.Known)
		waitListed(t, g)
	})

	t.Run("a resend (--enable-reverse-sync) and DumpInterval 0", func(t *testing.T) {
		_, g, as := setup(t)
		as[0].path = "/r"
		tg := target(translate(t, objects(as...)))
		tg.Resend = true
		res, err := g.sync(ctx, tg)
		require.NoError(t, err)
		require.False(t, res.Known)

		e2, g2 := newKong(t, Options{})
		_, _ = syncCounted(t, e2, g2, translate(t, objects(as...)))
		as[0].path = "/s"
		res, _ = syncCounted(t, e2, g2, translate(t, objects(as...)))
		require.False(t, res.Known)
	})
}

// rounds translates as the controller does: one translator.Incremental across rounds, which
// keeps the entities of the objects that did not change (patch.go relies on it).
type rounds struct{ inc translator.Incremental }

func (r *rounds) translate(tb testing.TB, objs []client.Object) *kongstate.State {
	tb.Helper()
	for _, o := range objs {
		// A version of the content, as the API server gives a changed object a new one.
		o.SetResourceVersion("")
		b, err := json.Marshal(o)
		require.NoError(tb, err)
		o.SetResourceVersion(fmt.Sprintf("%x", sha256.Sum256(b))[:16])
	}
	st, err := store.NewForObjects(objs, store.Options{})
	require.NoError(tb, err)
	snap, err := st.Snapshot(ctx)
	require.NoError(tb, err)
	return r.inc.Build(snap, translator.Options{}).State
}

// Issue #45: a change of Ingresses, Services or endpoints diffs only the services and
// upstreams that changed, and writes exactly what a whole diff writes: each round is synced
// to two Kongs, one by patches against the known state, one by a dump and a whole diff, with
// the same changes as the result; after each, a dump of the patched Kong equals the
// translation, and the known state says so (the same translation again changes nothing).
func TestPatchedSyncWritesWhatAWholeDiffWould(t *testing.T) {
	e, patched := newKong(t, knownOpts)
	_, whole := newKong(t, Options{})
	var r rounds
	as := apps(30)
	keyed := objects(app{name: "keyed"})
	keyed[0].SetAnnotations(map[string]string{"konghq.com/plugins": "auth"})
	auth := &kongv1.KongPlugin{ObjectMeta: metav1.ObjectMeta{Name: "auth", Namespace: "default", UID: "uid-auth"},
		PluginName: "key-auth", Config: apiextensionsv1.JSON{Raw: []byte(`{}`)}}
	extra := []client.Object{}
	build := func() []client.Object {
		return append(append(append(objects(as...), keyed...), auth), extra...)
	}
	sync := func(t *testing.T, wantPatched bool) *kongstate.State {
		t.Helper()
		s := r.translate(t, build())
		res, err := patched.sync(ctx, target(s))
		require.NoError(t, err)
		ref, err := whole.sync(ctx, target(s))
		require.NoError(t, err)
		require.Equal(t, wantPatched, res.Patched, "patched")
		require.Equal(t, changeSet(ref), changeSet(res))
		requireHoldsExactly(t, patched, s)
		again, err := patched.Apply(ctx, s)
		require.NoError(t, err)
		require.Zero(t, again.Total(), "the known state differs from Kong: %+v", again.Changes)
		return s
	}
	sync(t, false) // the first sync dumps

	t.Run("a path", func(t *testing.T) {
		as[3].path = "/three"
		sync(t, true)
		require.Equal(t, []any{"/three/", "~/three$"}, routePaths(t, e.Entity("routes", routeName(as[3]))))
	})
	t.Run("an Ingress with its Service added", func(t *testing.T) {
		as = append(as, app{name: "app-new"})
		sync(t, true)
		require.NotNil(t, e.Entity("routes", routeName(as[len(as)-1])))
	})
	t.Run("an Ingress with its Service deleted", func(t *testing.T) {
		gone := as[len(as)-1] // the last: objects() numbers the others' UIDs and addresses by place
		as = as[:len(as)-1]
		sync(t, true)
		require.Nil(t, e.Entity("routes", routeName(gone)))
		require.Nil(t, e.Entity("services", "default."+gone.name+".80"))
	})
	t.Run("an Ingress's host, so its route's name", func(t *testing.T) {
		as[7].host = "renamed.example.com"
		sync(t, true)
	})
	t.Run("the Ingress with a plugin", func(t *testing.T) {
		for _, path := range []string{"/keyed", "/keyed2"} {
			ing := keyed[0].(*networkingv1.Ingress).DeepCopy() // a new object, as the cache has
			ing.Spec.Rules[0].HTTP.Paths[0].Path = path
			keyed[0] = ing
			sync(t, true) // its plugin entity is made again, on its route: in the unit
		}
	})
	t.Run("the Service of the Ingress with a plugin", func(t *testing.T) {
		// The translator makes the Ingress's plugin entities again with its Service.
		svc := keyed[1].(*corev1.Service).DeepCopy()
		svc.Annotations = map[string]string{"konghq.com/connect-timeout": "5000"}
		keyed[1] = svc
		s := sync(t, true)

		// A round that keeps the plugin entity (the same pointer) while the service
		// changes: the plugin on its route joins the unit on both sides, neither deleted nor
		// missed. Made by hand from the last State, as a splice would.
		next := *s
		next.Services = slices.Clone(s.Services)
		i := slices.IndexFunc(next.Services, func(f *file.FService) bool { return *f.Name == "default.keyed.80" })
		changed := *next.Services[i]
		changed.ConnectTimeout = kong.Int(7000)
		next.Services[i] = &changed
		require.NotEmpty(t, unitsOf(&next, units{services: map[string]bool{"default.keyed.80": true}}).Plugins)
		res, err := patched.sync(ctx, target(&next))
		require.NoError(t, err)
		require.True(t, res.Patched)
		require.Equal(t, []string{"update service default.keyed.80"}, changeSet(res))
		require.EqualValues(t, 7000, e.Entity("services", "default.keyed.80")["connect_timeout"])
		requireHoldsExactly(t, patched, &next)
		_, err = whole.sync(ctx, target(&next))
		require.NoError(t, err)
	})
	t.Run("an Ingress with a plugin added (its route parked until the plugin exists), then deleted", func(t *testing.T) {
		more := objects(app{name: "keyed-too"})
		more[0].SetAnnotations(map[string]string{"konghq.com/plugins": "auth"})
		for i := range more {
			more[i].SetUID(uid(more[i].GetObjectKind().GroupVersionKind().Kind+"-too", 99))
		}
		extra = more
		sync(t, true)
		route := e.Entity("routes", routeName(app{name: "keyed-too"}))
		require.NotNil(t, route)
		require.Equal(t, e.Entity("services", "default.keyed-too.80")["id"], route["service"].(map[string]any)["id"], "unparked")
		require.Nil(t, e.Entity("services", parkingServiceName))
		extra = nil
		sync(t, true)
		require.Nil(t, e.Entity("routes", routeName(app{name: "keyed-too"})))
	})
	t.Run("a global plugin: not a unit, the whole target against the known state", func(t *testing.T) {
		extra = append(extra, &kongv1.KongClusterPlugin{
			ObjectMeta: metav1.ObjectMeta{Name: "global-cors", UID: "uid-global", Labels: map[string]string{"global": "true"},
				Annotations: map[string]string{"kubernetes.io/ingress.class": "kong"}},
			PluginName: "cors", Config: apiextensionsv1.JSON{Raw: []byte(`{}`)}})
		s := sync(t, false)
		require.NotEmpty(t, s.Plugins)
		as[9].path = "/nine"
		sync(t, true)
	})
}

// changeSet is the changes of a result, without their errors, in a comparable form: a
// target named with its tags rather than its upstream's ID (each Kong gave the upstream a
// random one), a plugin with its tags rather than its route's or service's name (the
// syncer names a deleted one's route by ID when its current state came from Kong's answer to
// a write rather than from a dump).
func changeSet(res *Result) []string {
	var out []string
	for _, c := range res.Changes {
		name := c.Name
		if c.Kind == "target" || c.Kind == "plugin" {
			name, _, _ = strings.Cut(name, " for ")
			name += " " + fmt.Sprint(c.Tags)
		}
		out = append(out, fmt.Sprintf("%s %s %s", c.Op, c.Kind, name))
	}
	sort.Strings(out)
	return out
}

// A changed unit whose plugin names a consumer (outside every unit) does not build alone: the
// sync falls back to the whole target against the known state, and Kong ends holding the
// translation, as a whole diff makes it.
func TestPatchWithAPluginNamingAConsumer(t *testing.T) {
	e, patched := newKong(t, knownOpts)
	_, whole := newKong(t, Options{})
	s := translate(t, objects(apps(5)...))
	consumer := &file.FConsumer{Consumer: kong.Consumer{ID: kong.String("5b1c0a6e-6a44-4b53-9a5e-7c1f2f0e0a01"),
		Username: kong.String("alice"), Tags: kong.StringSlice("k8s-name:alice", "k8s-namespace:default", "k8s-kind:KongConsumer")}}
	s.Consumers = append(s.Consumers, consumer)
	for _, g := range []*Gateway{patched, whole} {
		_, err := g.sync(ctx, target(s))
		require.NoError(t, err)
	}

	next := *s
	next.Services = slices.Clone(s.Services)
	svc := *next.Services[2]
	svc.ConnectTimeout = kong.Int(7000)
	next.Services[2] = &svc
	route := svc.Routes[0]
	next.Plugins = append(slices.Clone(s.Plugins), &file.FPlugin{Plugin: kong.Plugin{
		ID: kong.String("5b1c0a6e-6a44-4b53-9a5e-7c1f2f0e0a02"), Name: kong.String("rate-limiting"),
		Route: &kong.Route{ID: route.Name}, Consumer: &kong.Consumer{ID: consumer.ID},
		Config: kong.Configuration{"minute": 10}, Tags: route.Tags}})
	_, ok := changedUnits(s, &next)
	require.True(t, ok, "the plugin is on a unit's route: a patch is tried")

	res, err := patched.sync(ctx, target(&next))
	require.NoError(t, err)
	require.True(t, res.Known)
	// file.Get resolves the plugin's consumer in the content or the current state, which a
	// patch's units do not hold: the whole target is built against the known state instead.
	require.False(t, res.Patched)
	ref, err := whole.sync(ctx, target(&next))
	require.NoError(t, err)
	require.Equal(t, changeSet(ref), changeSet(res))
	requireHoldsExactly(t, patched, &next)
	again, err := patched.Apply(ctx, &next)
	require.NoError(t, err)
	require.Zero(t, again.Total(), "changes: %+v", again.Changes)
	require.Len(t, e.Entities("plugins"), 1)
}
