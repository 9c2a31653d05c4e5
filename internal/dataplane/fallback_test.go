package dataplane

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/kong/go-kong/kong"
	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/dataplane/dbless"
	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// app is an Ingress routing host to a Service of the same name, with its EndpointSlice;
// plugins is its konghq.com/plugins annotation ("" for none).
func app(name, plugins string) []client.Object {
	class := "kong"
	prefix := netv1.PathTypePrefix
	ready := true
	port := int32(8080)
	ing := &netv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-ing-" + name)},
		Spec: netv1.IngressSpec{IngressClassName: &class, Rules: []netv1.IngressRule{{
			Host: name + ".example.com",
			IngressRuleValue: netv1.IngressRuleValue{HTTP: &netv1.HTTPIngressRuleValue{Paths: []netv1.HTTPIngressPath{{
				Path: "/", PathType: &prefix,
				Backend: netv1.IngressBackend{Service: &netv1.IngressServiceBackend{Name: name, Port: netv1.ServiceBackendPort{Number: 80}}},
			}}}},
		}}},
	}
	if plugins != "" {
		ing.Annotations = map[string]string{"konghq.com/plugins": plugins}
	}
	return []client.Object{ing,
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-svc-" + name)},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
		},
		&discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: name + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Port: &port}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		},
	}
}

// plugin is a KongPlugin named name running the Kong plugin kongName with config.
func plugin(name, kongName, config string) *kongv1.KongPlugin {
	p := &kongv1.KongPlugin{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-plugin-" + name)}, PluginName: kongName}
	if config != "" {
		p.Config = apiextensionsv1.JSON{Raw: []byte(config)}
	}
	return p
}

func objects(groups ...[]client.Object) []client.Object {
	var out []client.Object
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

// fallbackLoop runs a loop over a swappable source against one DB-less emulator.
func fallbackLoop(t *testing.T, opts Options, objs []client.Object) (*kongemu.Server, *swapSource, *reports, *Trigger, *Loop) {
	t.Helper()
	srv, c := startEmulator(t)
	src, rep, trigger, l := fallbackLoopOn(t, srv, c, opts, objs)
	return srv, src, rep, trigger, l
}

// fallbackLoopOn is fallbackLoop against the emulator srv, reached through c.
func fallbackLoopOn(t *testing.T, srv *kongemu.Server, c *kong.Client, opts Options, objs []client.Object) (*swapSource, *reports, *Trigger, *Loop) {
	t.Helper()
	src := &swapSource{}
	src.cur.Store(newStore(t, objs))
	rep := &reports{}
	trigger := NewTrigger()
	opts.Source, opts.Barrier, opts.Translate = src, syncedBarrier{}, translate
	opts.Gateways = []Gateway{NewDetectingGateway(srv.URL, c, nil, logr.Discard())}
	opts.Reporter, opts.Trigger, opts.Period, opts.Quiet, opts.Logger = rep, trigger, time.Hour, time.Millisecond, testr.New(t)
	l := NewLoop(opts)
	run(t, l)
	return src, rep, trigger, l
}

// lastFallback waits for a report with a fallback and returns it.
func lastFallback(t *testing.T, rep *reports) GatewayResult {
	t.Helper()
	var out GatewayResult
	require.Eventually(t, func() bool {
		for _, r := range rep.all() {
			for _, g := range r.Gateways {
				if g.Fallback != nil {
					out = g
				}
			}
		}
		return out.Fallback != nil
	}, 5*time.Second, time.Millisecond)
	return out
}

// waitRefusalWithoutFallback waits for a report of a refusal and checks no fallback was tried.
func waitRefusalWithoutFallback(t *testing.T, rep *reports) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, r := range rep.all() {
			for _, g := range r.Gateways {
				if refusal(g.Err) != nil {
					require.Nil(t, g.Fallback)
					return true
				}
			}
		}
		return false
	}, 5*time.Second, time.Millisecond)
}

func hasRoute(srv *kongemu.Server, app string) bool {
	return srv.Entity("routes", "default."+app+"."+app+"."+app+".example.com.80") != nil
}

// A KongPlugin Kong refuses (a plugin it does not have) on one Ingress of three: the
// gateway refuses the whole configuration, the fallback leaves the plugin and the Ingress
// that uses it out, and the other two Ingresses reach Kong, as do later changes.
func TestFallbackLeavesOutTheRefusedObjectAndItsDependents(t *testing.T) {
	objs := objects(app("a", ""), app("b", "custom"), app("c", ""), []client.Object{plugin("custom", "no-such-plugin", "")})
	srv, src, rep, trigger, l := fallbackLoop(t, Options{Fallback: true}, objs)
	<-l.FirstSyncDone()

	res := lastFallback(t, rep)
	require.Error(t, res.Err, "the configuration itself was refused")
	require.NoError(t, res.Fallback.Err, "the fallback was taken")
	require.Equal(t, []string{"KongPlugin default/custom"}, refStrings(res.Fallback.Broken))
	require.Equal(t, []string{"Ingress default/b", "KongPlugin default/custom"}, refStrings(res.Fallback.Excluded),
		"the Ingress that uses the plugin goes with it; its Service, which the plugin does not touch, stays")
	require.True(t, hasRoute(srv, "a"))
	require.False(t, hasRoute(srv, "b"))
	require.True(t, hasRoute(srv, "c"))
	require.Empty(t, srv.Entities("plugins"))
	require.NoError(t, l.Ready(), "a gateway holding the fallback counts as synced")

	// A later change reaches Kong while the plugin stays broken.
	src.cur.Store(newStore(t, append(objs, app("d", "")...)))
	trigger.Request()
	require.Eventually(t, func() bool { return hasRoute(srv, "d") }, 5*time.Second, time.Millisecond)

	// Fixing the plugin brings its Ingress back.
	fixed := objects(app("a", ""), app("b", "custom"), app("c", ""), app("d", ""), []client.Object{plugin("custom", "correlation-id", "")})
	src.cur.Store(newStore(t, fixed))
	trigger.Request()
	require.Eventually(t, func() bool { return hasRoute(srv, "b") }, 5*time.Second, time.Millisecond)
	require.Len(t, srv.Entities("plugins"), 1)
}

// withDefaultBackend gives app's Ingress (the first of objs) a default backend, its own
// Service, and a creation time.
func withDefaultBackend(objs []client.Object, created time.Time) []client.Object {
	ing := objs[0].(*netv1.Ingress)
	ing.CreationTimestamp = metav1.NewTime(created)
	ing.Spec.DefaultBackend = &netv1.IngressBackend{Service: &netv1.IngressServiceBackend{Name: ing.Name, Port: netv1.ServiceBackendPort{Number: 80}}}
	return objs
}

// Objects that only share a value do not fall together: the older Ingress holds the
// cluster's default backend and the newer one's is ignored (each refers to that shared value
// in the graph), and when the older one goes for a broken plugin, the newer one stays and
// its default backend is served, as KIC's fallback does.
func TestFallbackKeepsWhatOnlySharesAValueWithTheRefused(t *testing.T) {
	now := time.Now()
	objs := objects(withDefaultBackend(app("a", "custom"), now.Add(-time.Hour)), withDefaultBackend(app("b", ""), now),
		[]client.Object{plugin("custom", "no-such-plugin", "")})
	srv, _, rep, _, l := fallbackLoop(t, Options{Fallback: true}, objs)
	<-l.FirstSyncDone()

	res := lastFallback(t, rep)
	require.NoError(t, res.Fallback.Err)
	require.Equal(t, []string{"Ingress default/a", "KongPlugin default/custom"}, refStrings(res.Fallback.Excluded))
	require.True(t, hasRoute(srv, "b"))
	require.NotNil(t, srv.Entity("routes", "default.b"), "the newer Ingress's default backend, no longer ignored")
}

// With the gate off (KIC's default) the gateway keeps its last good configuration and no
// later change reaches it while the broken object stays.
func TestWithoutFallbackTheGatewayKeepsItsLastGoodConfiguration(t *testing.T) {
	good := objects(app("a", ""))
	srv, src, rep, trigger, l := fallbackLoop(t, Options{Fallback: false}, good)
	<-l.FirstSyncDone()
	hash := srv.ConfigHash()

	src.cur.Store(newStore(t, objects(good, app("b", "custom"), []client.Object{plugin("custom", "no-such-plugin", "")})))
	trigger.Request()
	waitRefusalWithoutFallback(t, rep)
	require.Equal(t, hash, srv.ConfigHash())
}

// --use-last-valid-config-for-fallback: the objects left out come back as the last accepted
// snapshot had them, so the Ingress keeps its route and its working plugin.
func TestFallbackBackfillsFromTheLastAcceptedSnapshot(t *testing.T) {
	good := objects(app("a", ""), app("b", "custom"), []client.Object{plugin("custom", "correlation-id", "")})
	srv, src, rep, trigger, l := fallbackLoop(t, Options{Fallback: true, UseLastValidConfigForFallback: true}, good)
	<-l.FirstSyncDone()
	require.Len(t, srv.Entities("plugins"), 1)

	// The plugin breaks, and Ingress c appears.
	src.cur.Store(newStore(t, objects(app("a", ""), app("b", "custom"), app("c", ""), []client.Object{plugin("custom", "no-such-plugin", "")})))
	trigger.Request()
	res := lastFallback(t, rep)
	require.NoError(t, res.Fallback.Err)
	require.Equal(t, []string{"Ingress default/b", "KongPlugin default/custom"}, refStrings(res.Fallback.Backfilled))
	require.True(t, hasRoute(srv, "b"), "the Ingress keeps its route")
	require.True(t, hasRoute(srv, "c"), "the new Ingress is there")
	plugins := srv.Entities("plugins")
	require.Len(t, plugins, 1)
	require.Equal(t, "correlation-id", plugins[0]["name"], "the plugin as it was last accepted")
}

// A refusal that names no object (tags that lead nowhere) cannot be isolated: no fallback,
// the gateway keeps its last good configuration.
func TestRefusalWithoutObjectsIsNotIsolated(t *testing.T) {
	srv, src, rep, trigger, l := fallbackLoop(t, Options{Fallback: true}, objects(app("a", "")))
	<-l.FirstSyncDone()
	hash := srv.ConfigHash()
	src.cur.Store(newStore(t, objects(app("a", ""), app("b", ""))))
	srv.RejectNextConfig(kongemu.ConfigRejection{EntityType: "route", EntityName: "x", Field: "hosts.0", Message: "invalid value"})
	trigger.Request()
	waitRefusalWithoutFallback(t, rep)
	require.Equal(t, hash, srv.ConfigHash())
}

// One translation per set of broken objects, whatever the number of gateways that refused.
func TestFallbackPlanIsSharedByGateways(t *testing.T) {
	objs := objects(app("a", ""), app("b", "custom"), []client.Object{plugin("custom", "no-such-plugin", "")})
	snap, err := newStore(t, objs).Snapshot(context.Background())
	require.NoError(t, err)
	translations := 0
	res := translate(snap)
	fb := &fallbacks{translate: func(s *store.Snapshot) translator.Result { translations++; return translate(s) }, snapshot: snap, graph: res.Graph}
	broken := []kongstate.ObjectRef{{Group: "configuration.konghq.com", Kind: "KongPlugin", Namespace: "default", Name: "custom"}}
	p1, built1 := fb.plan(broken)
	p2, built2 := fb.plan(broken)
	require.Same(t, p1, p2)
	require.True(t, built1)
	require.False(t, built2, "a plan already made is not counted as a fallback translation again")
	require.Equal(t, 1, translations)
	require.Len(t, p1.snapshot.Ingresses, 1)
	require.Equal(t, "a", p1.snapshot.Ingresses[0].Name)
	require.Len(t, p1.snapshot.Services, 2, "the Service of the excluded Ingress is not a dependent of it")
}

func refStrings(refs []kongstate.ObjectRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.String()
	}
	return out
}

// upstreamNames are the names of the upstreams the emulator holds.
func upstreamNames(srv *kongemu.Server) []string {
	var out []string
	for _, u := range srv.Entities("upstreams") {
		name, _ := u["name"].(string)
		out = append(out, name)
	}
	return out
}

// A fresh Kong (it holds nothing) whose every object is refused: the fallback leaves nothing
// but is sent all the same, as KIC sends it, the stub upstream `kong` alone, so that Kong
// holds a configuration and its /status/ready answers 200.
func TestFallbackLeavingNothingIsSentToAGatewayThatHoldsNothing(t *testing.T) {
	objs := objects(app("a", "custom"), []client.Object{plugin("custom", "no-such-plugin", "")})
	srv, _, rep, _, l := fallbackLoop(t, Options{Fallback: true}, objs)

	res := lastFallback(t, rep)
	require.Error(t, res.Err, "the configuration itself was refused")
	require.NoError(t, res.Fallback.Err, "the stub configuration was taken")
	select {
	case <-l.FirstSyncDone():
	case <-time.After(5 * time.Second):
		t.Fatal("the first sync did not complete")
	}
	require.Equal(t, []string{"Ingress default/a", "KongPlugin default/custom"}, refStrings(res.Fallback.Excluded))
	require.NotEqual(t, dbless.EmptyConfigurationHash, srv.ConfigHash(), "the gateway holds a configuration")
	require.Equal(t, []string{"kong"}, upstreamNames(srv), "the stub upstream alone")
	require.Empty(t, srv.Entities("routes"))
	require.Empty(t, srv.Entities("services"))
	require.NoError(t, l.Ready())
}

// A gateway that holds a good configuration, then a change after which every object is
// refused or depends on one: the fallback would leave nothing (the stub upstream alone), so it
// is not sent; the gateway keeps the routes it serves, and the result says why. It is not
// retried with backoff: a resync says the same, without sending anything.
func TestFallbackLeavingNothingKeepsWhatTheGatewayHolds(t *testing.T) {
	good := objects(app("a", "custom"), []client.Object{plugin("custom", "correlation-id", "")})
	srv, src, rep, trigger, l := fallbackLoop(t, Options{Fallback: true}, good)
	<-l.FirstSyncDone()
	require.True(t, hasRoute(srv, "a"))
	hash := srv.ConfigHash()

	src.cur.Store(newStore(t, objects(app("a", "custom"), []client.Object{plugin("custom", "no-such-plugin", "")})))
	trigger.Request()
	res := lastFallback(t, rep)
	require.Error(t, res.Err, "the configuration itself was refused")
	require.ErrorIs(t, res.Fallback.Err, ErrFallbackLeavesNothing)
	require.Equal(t, []string{"Ingress default/a", "KongPlugin default/custom"}, refStrings(res.Fallback.Excluded))
	require.Zero(t, res.Fallback.Size, "nothing was sent")
	require.Equal(t, hash, srv.ConfigHash(), "the gateway keeps the configuration it holds")
	require.True(t, hasRoute(srv, "a"))
	require.Len(t, srv.Entities("plugins"), 1)
	require.NotContains(t, upstreamNames(srv), "kong", "no stub")

	// A resync: the same answer, no retry with backoff, still nothing sent.
	before := len(rep.all())
	trigger.Request()
	require.Eventually(t, func() bool {
		for _, r := range rep.all()[before:] {
			for _, g := range r.Gateways {
				if g.Fallback != nil {
					require.ErrorIs(t, g.Fallback.Err, ErrFallbackLeavesNothing)
					return true
				}
			}
		}
		return false
	}, 5*time.Second, time.Millisecond)
	for _, r := range rep.all() {
		for _, g := range r.Gateways {
			require.False(t, g.Skipped, "not backing off")
		}
	}
	require.Equal(t, hash, srv.ConfigHash())
	require.NoError(t, l.Ready(), "the gateway took a configuration before")
}

// tickingClock moves a millisecond at every reading of Now.
type tickingClock struct {
	*testingclock.FakePassiveClock
}

func (c *tickingClock) Now() time.Time {
	c.SetTime(c.FakePassiveClock.Now().Add(time.Millisecond))
	return c.FakePassiveClock.Now()
}

// The fallback snapshot's building (KIC's fallback cache generation) is timed apart from its
// translation, and before it.
func TestFallbackPlanTimesItsSnapshotApartFromItsTranslation(t *testing.T) {
	objs := objects(app("a", ""), app("b", "custom"), []client.Object{plugin("custom", "no-such-plugin", "")})
	snap, err := newStore(t, objs).Snapshot(context.Background())
	require.NoError(t, err)
	clk := &tickingClock{testingclock.NewFakePassiveClock(time.Now())}
	slow := func(s *store.Snapshot) translator.Result {
		clk.SetTime(clk.FakePassiveClock.Now().Add(10 * time.Millisecond))
		return translate(s)
	}
	fb := &fallbacks{translate: slow, snapshot: snap, graph: translate(snap).Graph, clock: clk}
	p, built := fb.plan([]kongstate.ObjectRef{{Group: "configuration.konghq.com", Kind: "KongPlugin", Namespace: "default", Name: "custom"}})
	require.True(t, built)
	require.Equal(t, time.Millisecond, p.translation.CacheGeneration, "from the start of the building to the start of the translation")
	require.Equal(t, 11*time.Millisecond, p.translation.Duration, "the translation alone")
}

// A controller that restarts against a Kong holding the stub alone (its previous process sent
// it: every object refused) while every object is still refused: the fallback is the stub the
// gateway holds, so sending it changes nothing and is done (nothing is posted); the gateway
// counts as synced and the controller becomes ready. Judging by "holds a configuration" alone
// would keep the stub with ErrFallbackLeavesNothing and never be ready.
func TestFallbackLeavingNothingIsTakenByAGatewayHoldingTheStubAlone(t *testing.T) {
	objs := objects(app("a", "custom"), []client.Object{plugin("custom", "no-such-plugin", "")})
	srv, c := startEmulator(t)
	_, rep, _, _ := fallbackLoopOn(t, srv, c, Options{Fallback: true}, objs)
	require.NoError(t, lastFallback(t, rep).Fallback.Err)
	require.Equal(t, []string{"kong"}, upstreamNames(srv))
	hash := srv.ConfigHash()

	_, rep, _, l := fallbackLoopOn(t, srv, c, Options{Fallback: true}, objs) // the controller restarted
	res := lastFallback(t, rep)
	require.NoError(t, res.Fallback.Err, "the gateway holds the fallback already")
	select {
	case <-l.FirstSyncDone():
	case <-time.After(5 * time.Second):
		t.Fatal("the first sync did not complete")
	}
	require.NoError(t, l.Ready())
	require.Equal(t, hash, srv.ConfigHash())
}

// serviceNames are the names of a State's services.
func serviceNames(s *kongstate.State) []string {
	var out []string
	for _, svc := range s.Services {
		out = append(out, *svc.Name)
	}
	return out
}

// heldAfter waits for a report whose gateways' results satisfy done and returns its Held.
func heldAfter(t *testing.T, rep *reports, done func(GatewayResult) bool) (*kongstate.State, *kongstate.State) {
	t.Helper()
	var held, state *kongstate.State
	require.Eventually(t, func() bool {
		for _, r := range rep.all() {
			for _, g := range r.Gateways {
				if done(g) {
					held, state = r.Held, r.State
					return true
				}
			}
		}
		return false
	}, 5*time.Second, time.Millisecond)
	return held, state
}

// Round.Held is what the gateways hold (what Konnect is given): the round's configuration
// when taken, the fallback configuration when that was taken instead, and the earlier
// configuration when the gateway refused without a fallback.
func TestRoundHeldIsWhatTheGatewaysTook(t *testing.T) {
	broken := objects(app("a", ""), app("b", "custom"), []client.Object{plugin("custom", "no-such-plugin", "")})
	_, _, rep, _, l := fallbackLoop(t, Options{Fallback: true}, broken)
	<-l.FirstSyncDone()
	held, state := heldAfter(t, rep, func(g GatewayResult) bool { return g.Fallback != nil && g.Fallback.Err == nil })
	require.NotNil(t, held)
	require.NotSame(t, state, held, "the fallback configuration, not the refused one")
	require.Equal(t, []string{"default.a.80"}, serviceNames(held))

	_, src, rep, trigger, l := fallbackLoop(t, Options{Fallback: false}, objects(app("a", "")))
	<-l.FirstSyncDone()
	good, state := heldAfter(t, rep, func(g GatewayResult) bool { return g.Err == nil && !g.Skipped })
	require.Same(t, state, good, "the round's configuration, taken")
	src.cur.Store(newStore(t, broken))
	trigger.Request()
	held, state = heldAfter(t, rep, func(g GatewayResult) bool { return refusal(g.Err) != nil })
	require.NotSame(t, state, held)
	require.Same(t, good, held, "refused without fallback: the gateway holds what it held")
}

// Gateways that hold different configurations (one took a fallback, one the round's), or a
// gateway that holds none yet: nothing is held in common.
func TestHeldOnlyWhenEveryGatewayHoldsTheSame(t *testing.T) {
	a, b := &kongstate.State{}, &kongstate.State{}
	l := &Loop{gateways: []*gatewayState{{holds: a}, {holds: a}}}
	require.Same(t, a, l.held())
	l.gateways[1].holds = b
	require.Nil(t, l.held())
	l.gateways[1].holds = nil
	require.Nil(t, l.held())
}
