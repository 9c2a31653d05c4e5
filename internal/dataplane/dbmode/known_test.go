package dbmode

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/kongstate"
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
	_ = []client.Object(objs)
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

		g.now = func() time.Time { return start.Add(time.Hour + time.Minute) }
		as[0].path = "/b"
		res, _ = syncCounted(t, e, g, translate(t, objects(as...)))
		require.False(t, res.Known)
		require.NotNil(t, e.Entity("routes", victim), "the dump found the route missing and created it")
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
