package discovery

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

var svc = types.NamespacedName{Namespace: "kong", Name: "kong-admin"}

func ptr[T any](v T) *T { return &v }

// endpoint is one Pod's endpoint at addr.
func endpoint(addr, pod string) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)},
		TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "kong", Name: pod}}
}

func slice(name string, port int32, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: svc.Namespace, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("admin-tls"), Port: ptr(port)}, {Name: ptr("proxy"), Port: ptr(int32(8000))}},
		Endpoints:   eps,
	}
}

// KIC's rules: https to the Pod IP and the named port, server name pod.<svc>.<ns>.svc; only
// endpoints of Pods, not terminating; not-ready ones are kept (their gateway is checked).
func TestAdminAPIs(t *testing.T) {
	notReady := endpoint("10.0.0.3", "c")
	notReady.Conditions.Ready = ptr(false)
	terminating := endpoint("10.0.0.4", "d")
	terminating.Conditions.Terminating = ptr(true)
	noPod := endpoint("10.0.0.5", "e")
	noPod.TargetRef = nil
	v6 := slice("v6", 8444, endpoint("fd00::1", "f"))
	v6.AddressType = discoveryv1.AddressTypeIPv6

	got := AdminAPIs([]discoveryv1.EndpointSlice{
		*slice("a", 8444, endpoint("10.0.0.2", "b"), endpoint("10.0.0.1", "a"), notReady, terminating, noPod),
		*slice("dup", 8444, endpoint("10.0.0.1", "a")),
		*v6,
	}, svc, map[string]bool{"admin-tls": true})
	var urls []string
	for _, a := range got {
		urls = append(urls, a.URL)
		require.Equal(t, "pod.kong-admin.kong.svc", a.ServerName)
	}
	require.Equal(t, []string{"https://10.0.0.1:8444", "https://10.0.0.2:8444", "https://10.0.0.3:8444", "https://[fd00::1]:8444"}, urls)
	require.Equal(t, types.NamespacedName{Namespace: "kong", Name: "a"}, got[0].Pod)
}

type emu struct {
	srv  *kongemu.Server
	host string
	port int32
}

func startKong(t *testing.T, mode kongemu.Mode) emu {
	t.Helper()
	return startKongWith(t, kongemu.Options{Mode: mode})
}

func startKongWith(t *testing.T, opts kongemu.Options) emu {
	t.Helper()
	srv, err := kongemu.New(opts).StartWith(kongemu.StartOptions{TLS: true})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	host, port, err := net.SplitHostPort(strings.TrimPrefix(srv.URL, "https://"))
	require.NoError(t, err)
	p, err := strconv.Atoi(port)
	require.NoError(t, err)
	return emu{srv, host, int32(p)}
}

type fixture struct {
	t       *testing.T
	client  client.Client
	set     *Set
	changed chan struct{}
}

// newSet runs a Set over the EndpointSlices in c; changes arrive on changed.
func newSet(t *testing.T, objs ...client.Object) *fixture {
	f := newIdleSet(t, nil, objs...)
	f.run()
	return f
}

// run runs the set until the test ends, and waits for its first change.
func (f *fixture) run() {
	ctx, cancel := context.WithCancel(context.Background())
	f.t.Cleanup(cancel)
	go f.set.Run(ctx, func() { f.changed <- struct{}{} })
	f.next()
}

// replacePod replaces the Pod of k, listed in old (one of slicesFor's EndpointSlices), by one of
// another name at the same address and port: a hostNetwork Kong replaced on its node.
func (f *fixture) replacePod(old client.Object, k emu) {
	replaced := slice(old.GetName(), k.port, endpoint(k.host, "kong-1-replacement"))
	replaced.ResourceVersion = old.GetResourceVersion()
	require.NoError(f.t, f.client.Update(context.Background(), replaced))
}

// newIdleSet is a Set over the EndpointSlices in c, telling flavors the gateways' routers,
// not running.
func newIdleSet(t *testing.T, flavors *dataplane.RouterFlavors, objs ...client.Object) *fixture {
	c := fake.NewClientBuilder().WithScheme(store.NewScheme()).WithObjects(objs...).Build()
	set := New(Options{Flavors: flavors,
		Reader: c, Services: []types.NamespacedName{svc}, PortNames: []string{"admin-tls"},
		HTTPClient: func(serverName string) (*http.Client, error) {
			require.Equal(t, "pod.kong-admin.kong.svc", serverName)
			return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}, nil //nolint:gosec // test
		},
		DBMode:   func(url string, _ *http.Client) (dataplane.Gateway, error) { return dbGateway(url), nil },
		Interval: time.Hour, Timeout: 2 * time.Second, Logger: testr.New(t),
	})
	return &fixture{t: t, client: c, set: set, changed: make(chan struct{}, 100)}
}

// next waits for the set to change.
func (f *fixture) next() {
	f.t.Helper()
	select {
	case <-f.changed:
	case <-time.After(10 * time.Second):
		f.t.Fatal("the set did not change")
	}
}

func (f *fixture) urls() []string {
	var out []string
	for _, g := range f.set.Gateways() {
		out = append(out, g.URL())
	}
	return out
}

type dbGateway string

func (g dbGateway) URL() string                                   { return string(g) }
func (g dbGateway) Sync(context.Context, *dataplane.Target) error { return nil }

func url(k emu) string { return "https://" + k.host + ":" + strconv.Itoa(int(k.port)) }

// The emulators all listen on 127.0.0.1, each on its own port: one EndpointSlice per port.
func slicesFor(ks ...emu) []client.Object {
	var out []client.Object
	for i, k := range ks {
		out = append(out, slice("s"+strconv.Itoa(i), k.port, endpoint(k.host, "kong-"+strconv.Itoa(i))))
	}
	return out
}

func TestDBLessGatewaysAreAllConfigured(t *testing.T) {
	a, b := startKong(t, kongemu.DBLess), startKong(t, kongemu.DBLess)
	objs := slicesFor(a, b)
	// A third endpoint that does not answer stays pending.
	objs = append(objs, slice("dead", 1, endpoint("127.0.0.1", "dead")))
	f := newSet(t, objs...)
	require.ElementsMatch(t, []string{url(a), url(b)}, f.urls())
	pod, ok := f.set.PodOf(url(b))
	require.True(t, ok)
	require.Equal(t, "kong/kong-1", pod.String(), "each gateway's Pod is known (Konnect names its node after it)")
	_, ok = f.set.PodOf("https://127.0.0.1:1")
	require.False(t, ok, "a gateway not ready has none")

	// b's Pod terminates: its endpoint goes, and so does the gateway.
	es := objs[1].(*discoveryv1.EndpointSlice)
	es.Endpoints[0].Conditions = discoveryv1.EndpointConditions{Ready: ptr(false), Serving: ptr(false), Terminating: ptr(true)}
	require.NoError(t, f.client.Update(context.Background(), es))
	f.set.Kick()
	f.next()
	require.Equal(t, []string{url(a)}, f.urls())
	_, ok = f.set.PodOf(url(b))
	require.False(t, ok, "gone with its gateway")
}

// Gateways sharing a database: one writer, kept while it is there; another when it goes.
func TestDatabaseGatewaysHaveOneWriter(t *testing.T) {
	a, b, c := startKong(t, kongemu.Postgres), startKong(t, kongemu.Postgres), startKong(t, kongemu.Postgres)
	objs := slicesFor(a, b, c)
	f := newSet(t, objs...)
	first := f.urls()
	require.Len(t, first, 1, "one writer")
	require.Equal(t, min(url(a), url(b), url(c)), first[0])

	// Another gateway comes and goes: the writer stays.
	d := startKong(t, kongemu.Postgres)
	extra := slicesFor(d)[0].(*discoveryv1.EndpointSlice)
	extra.Name = "extra"
	require.NoError(t, f.client.Create(context.Background(), extra))
	f.set.Kick()
	require.Never(t, func() bool { return len(f.changed) > 0 }, 300*time.Millisecond, 10*time.Millisecond)
	require.Equal(t, first, f.urls())

	// The writer goes: another takes over.
	for _, o := range append(objs, extra) {
		es := o.(*discoveryv1.EndpointSlice)
		if url(emu{host: es.Endpoints[0].Addresses[0], port: *es.Ports[0].Port}) == first[0] {
			require.NoError(t, f.client.Delete(context.Background(), es))
		}
	}
	f.set.Kick()
	f.next()
	next := f.urls()
	require.Len(t, next, 1)
	require.NotEqual(t, first[0], next[0])
}

// twoRouters is an idle set over two gateways, a on the expressions router and b on
// traditional_compatible, telling flavors.
func twoRouters(t *testing.T) (a, b emu, objs []client.Object, flavors *dataplane.RouterFlavors, f *fixture) {
	a = startKongWith(t, kongemu.Options{Mode: kongemu.DBLess, RouterFlavor: kongemu.RouterExpressions})
	b = startKongWith(t, kongemu.Options{Mode: kongemu.DBLess, RouterFlavor: kongemu.RouterTraditionalCompatible})
	objs = slicesFor(a, b)
	flavors = dataplane.NewRouterFlavors(nil)
	return a, b, objs, flavors, newIdleSet(t, flavors, objs...)
}

// A standby learns the router of the discovered gateways without running the set: GET / of
// each Admin API, once, and nothing else; gateways gone are forgotten.
func TestLearnRoutersWithoutRunning(t *testing.T) {
	a, b, objs, flavors, f := twoRouters(t)
	ctx := context.Background()

	f.set.LearnRouters(ctx)
	require.False(t, flavors.Expressions(), "b is on the traditional_compatible router")
	require.True(t, flavors.RustRegexes())
	require.Empty(t, f.set.Gateways(), "nothing published: a standby configures no gateway")
	require.Equal(t, []string{min(url(a), url(b)), max(url(a), url(b))}, f.set.AskableURLs(),
		"but the gateways that answered can be asked what translation needs (edition, schemas)")
	asked := func(k emu) map[string]int { return k.srv.Emulator.Requests() }
	require.Equal(t, map[string]int{"GET /": 1}, asked(a))

	f.set.LearnRouters(ctx)
	require.Equal(t, map[string]int{"GET /": 1}, asked(a), "asked once, and nothing else")
	require.Equal(t, map[string]int{"GET /": 1}, asked(b))

	// b's Pod goes: only a's router counts.
	require.NoError(t, f.client.Delete(ctx, objs[1]))
	f.set.LearnRouters(ctx)
	require.True(t, flavors.Expressions())
	require.Equal(t, []string{url(a)}, f.set.AskableURLs())
}

// A standby asks again a gateway whose Pod was replaced on the same address (a hostNetwork
// Kong: the node's IP and the same port): the new Pod may run another router or database mode,
// and an answer kept by address alone would be the old Pod's for good.
func TestLearnRoutersAsksAReplacedPodAgain(t *testing.T) {
	a, b, objs, flavors, f := twoRouters(t)
	ctx := context.Background()
	f.set.LearnRouters(ctx)
	require.False(t, flavors.Expressions(), "b is on the traditional_compatible router")
	asked := func(k emu) map[string]int { return k.srv.Emulator.Requests() }
	require.Equal(t, map[string]int{"GET /": 1}, asked(b))

	// b's Pod is replaced by one of another name at the same address and port.
	f.replacePod(objs[1], b)
	f.set.LearnRouters(ctx)
	require.Equal(t, map[string]int{"GET /": 2}, asked(b), "the new Pod is asked what it runs")
	require.Equal(t, map[string]int{"GET /": 1}, asked(a), "a's Pod is the same: not asked again")
	f.set.LearnRouters(ctx)
	require.Equal(t, map[string]int{"GET /": 2}, asked(b), "once")
}

// The leader's set takes a gateway whose Pod was replaced on the same address as a new one: it
// asks the new Pod what it runs and publishes a new gateway (which the loop configures: the
// new Kong starts empty), where it kept the old Pod's.
func TestRunTakesAReplacedPodAsANewGateway(t *testing.T) {
	_, b, objs, _, f := twoRouters(t)
	f.run()
	byURL := func() map[string]dataplane.Gateway {
		out := map[string]dataplane.Gateway{}
		for _, g := range f.set.Gateways() {
			out[g.URL()] = g
		}
		return out
	}
	before := byURL()
	require.Len(t, before, 2)
	require.Equal(t, 1, b.srv.Emulator.Requests()["GET /"])

	f.replacePod(objs[1], b)
	f.set.Kick()
	f.next()
	require.Equal(t, 2, b.srv.Emulator.Requests()["GET /"], "the new Pod is asked what it runs")
	after := byURL()
	require.Len(t, after, 2)
	require.NotSame(t, before[url(b)], after[url(b)], "a new gateway for the new Pod")
	for u, g := range after {
		if u != url(b) {
			require.Same(t, before[u], g, "the other gateway is kept")
		}
	}
}

// The leader's set forgets the router of a gateway it no longer discovers.
func TestRunForgetsTheRouterOfGatewaysGone(t *testing.T) {
	_, _, objs, flavors, f := twoRouters(t)
	f.run()
	require.False(t, flavors.Expressions())

	require.NoError(t, f.client.Delete(context.Background(), objs[1]))
	f.set.Kick()
	f.next()
	require.True(t, flavors.Expressions(), "the gateway gone no longer counts")
	require.Equal(t, f.urls(), f.set.AskableURLs(), "the leader's set: the gateways it configures")
}

// blockingKong is an Admin API whose GET / answers only once release is closed; arrived
// receives each request as it comes in.
func blockingKong(t *testing.T) (k emu, arrived chan struct{}, release func()) {
	t.Helper()
	arrived, released := make(chan struct{}, 10), make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-released
		_, _ = w.Write([]byte(`{"version":"3.9.0","configuration":{"database":"off","router_flavor":"traditional_compatible"}}`))
	}))
	var once sync.Once
	release = func() { once.Do(func() { close(released) }) }
	t.Cleanup(srv.Close)
	t.Cleanup(release) // before srv.Close, which waits for the handler
	host, port, err := net.SplitHostPort(strings.TrimPrefix(srv.URL, "https://"))
	require.NoError(t, err)
	p, err := strconv.Atoi(port)
	require.NoError(t, err)
	return emu{host: host, port: int32(p)}, arrived, release
}

// A standby's LearnRouters waiting for a discovered gateway that does not answer holds up
// nobody else: the admission webhook's AskableURLs answers with the gateways heard from
// meanwhile (it used to wait for LearnRouters' lock, up to the whole timeout).
func TestAskableURLsDoNotWaitForLearnRouters(t *testing.T) {
	a := startKong(t, kongemu.DBLess)
	slow, arrived, release := blockingKong(t)
	f := newIdleSet(t, nil, slicesFor(a)...)
	f.set.opts.Timeout = time.Hour // only the test's release ends the slow gateway's GET /
	ctx := context.Background()
	f.set.LearnRouters(ctx)
	require.Equal(t, []string{url(a)}, f.set.AskableURLs())

	require.NoError(t, f.client.Create(ctx, slicesFor(a, slow)[1]))
	learned := make(chan struct{})
	go func() {
		defer close(learned)
		f.set.LearnRouters(ctx)
	}()
	<-arrived // LearnRouters is waiting for the slow gateway's answer

	asked := make(chan []string, 1)
	go func() { asked <- f.set.AskableURLs() }()
	select {
	case urls := <-asked:
		require.Equal(t, []string{url(a)}, urls, "the gateway heard from, not the one still asked")
	case <-time.After(10 * time.Second):
		release()
		<-learned
		t.Fatal("AskableURLs waited for LearnRouters' GET / of a gateway that does not answer")
	}
	release()
	<-learned
	require.Equal(t, []string{min(url(a), url(slow)), max(url(a), url(slow))}, f.set.AskableURLs(), "its answer is kept")
}

// factsOf are the GatewayFacts the manager builds over the set: they ask the gateways the set
// names (AskableURLs) and are handed the set's GET / answers.
func factsOf(t *testing.T, set *Set) *dataplane.GatewayFacts {
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // test
	facts := dataplane.NewGatewayFacts(func() []*kong.Client {
		var out []*kong.Client
		for _, u := range set.AskableURLs() {
			c, err := kong.NewClient(kong.String(u), hc)
			require.NoError(t, err)
			out = append(out, c)
		}
		return out
	})
	set.ShareRootsWith(facts)
	return facts
}

// Each discovered gateway is asked GET / once for its router, its database mode and its
// edition together, on a standby (LearnRouters) as on the leader (the readiness check): the
// facts translation asks for take that answer instead of asking again.
func TestOneGETRootServesTheRouterAndTheEdition(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(f *fixture)
	}{
		{"standby", func(f *fixture) { f.set.LearnRouters(context.Background()) }},
		{"leader", func(f *fixture) { f.run() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := startKongWith(t, kongemu.Options{Mode: kongemu.DBLess, Edition: kongemu.Enterprise})
			b := startKongWith(t, kongemu.Options{Mode: kongemu.DBLess, Edition: kongemu.Enterprise})
			f := newIdleSet(t, nil, slicesFor(a, b)...)
			facts := factsOf(t, f.set)
			tc.run(f)
			for i := 0; i < 3; i++ { // the rounds of a period and of the next ones
				enterprise, _ := facts.Learn(context.Background(), nil)
				require.True(t, enterprise, "the edition, from the answer the set had")
			}
			for _, k := range []emu{a, b} {
				require.Equal(t, 1, k.srv.Emulator.Requests()["GET /"], "GET / of %s", url(k))
			}
		})
	}
}

// A standby knows how the leader syncs the gateways it heard from, so that it renders for the
// loop to take over what that sends: the DB-less body only for DB-less gateways.
func TestStandbyKnowsTheSyncProtocolOfTheGateways(t *testing.T) {
	for _, tc := range []struct {
		name  string
		modes []kongemu.Mode
		want  string
	}{
		{"none heard from", nil, ""},
		{"DB-less", []kongemu.Mode{kongemu.DBLess, kongemu.DBLess}, dataplane.ProtocolDBLess},
		{"database", []kongemu.Mode{kongemu.Postgres, kongemu.Postgres}, dataplane.ProtocolDeck},
		{"disagreeing: the leader configures those with a database", []kongemu.Mode{kongemu.DBLess, kongemu.Postgres}, dataplane.ProtocolDeck},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ks []emu
			for _, m := range tc.modes {
				ks = append(ks, startKong(t, m))
			}
			f := newIdleSet(t, nil, slicesFor(ks...)...)
			f.set.LearnRouters(context.Background())
			require.Equal(t, tc.want, f.set.SyncProtocol())
		})
	}
}

// A discovered DB-less gateway is made with the body limit its GET / said (issue #45): a
// larger body is refused without being sent.
func TestDiscoveredGatewayKnowsItsBodyLimit(t *testing.T) {
	k := startKongWith(t, kongemu.Options{Mode: kongemu.DBLess, AdminMaxBodySize: "1k"})
	f := newSet(t, slicesFor(k)...)
	gws := f.set.Gateways()
	require.Len(t, gws, 1)
	state := &kongstate.State{Upstreams: []*file.FUpstream{{Upstream: kong.Upstream{
		Name: kong.String("big"), Tags: []*string{kong.String(strings.Repeat("x", 2000))}}}}}
	err := gws[0].Sync(context.Background(), dataplane.NewTarget(translator.Result{State: state}, &kongstate.Renderer{}))
	var rej *dataplane.RejectedError
	require.ErrorAs(t, err, &rej)
	require.NotNil(t, rej.TooLarge)
	require.Equal(t, int64(1024), rej.TooLarge.Limit)
	require.Zero(t, k.srv.RequestCount(http.MethodPost, "/config"), "not sent")
}
