package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/manager"
	"github.com/konductor/konductor/internal/store"
)

// The seed's promise in requests (issue #43 item 4): a client sends requests at a steady rate
// through the Kong emulator's proxy to every route while konductor goes through a rolling
// restart, leader changes, an API server outage and Kong restarts, and not one request to a
// route that existed throughout fails. The control runs the rolling restart with the cache
// barrier removed (and the pre-konductor store it protected): requests fail, so the zeros
// prove something.
//
// The short version runs in `make test`; `make soak` runs KONDUCTOR_SOAK=full: 100 Ingresses
// and 100 HTTPRoutes, 20 leader changes, a 30 s outage.

type trafficSize struct {
	ingresses, httpRoutes int
	leaderChanges         int
	outage                time.Duration
	rate                  int // requests a second, over all routes
}

func trafficSizeOf() trafficSize {
	if os.Getenv("KONDUCTOR_SOAK") == "full" {
		return trafficSize{ingresses: 100, httpRoutes: 100, leaderChanges: 20, outage: 30 * time.Second, rate: 400}
	}
	return trafficSize{ingresses: 15, httpRoutes: 15, leaderChanges: 3, outage: 10 * time.Second, rate: 200}
}

// trafficTarget is a request the client sends and the backend that must answer it.
type trafficTarget struct {
	host, path string
	pod        string // the endpoint address that answers ("10.7.0.3:8080")
}

// trafficApps creates Ingress and HTTPRoute apps in ns, each with a Service whose one endpoint
// has an address of its own, so that an answer says which app it came from. The HTTPRoutes
// attach to Gateway "kong" of class ns, of controller "konductor.test/<ns>".
func trafficApps(t *testing.T, c client.Client, ns string, size trafficSize) []trafficTarget {
	t.Helper()
	ctx := context.Background()
	var targets []trafficTarget
	var objs []client.Object
	addr := func(i int) string { return fmt.Sprintf("10.7.%d.%d", i/200, i%200+1) }
	for i := range size.ingresses {
		name := fmt.Sprintf("ing-%03d", i)
		o := app(ns, name, name+".example.com")
		o[1].(*discoveryv1.EndpointSlice).Endpoints[0].Addresses = []string{addr(i)}
		objs = append(objs, o...)
		targets = append(targets, trafficTarget{host: name + ".example.com", path: "/", pod: addr(i) + ":8080"})
	}
	if size.httpRoutes > 0 {
		class, gw := gatewayOf(ns, "konductor.test/"+ns)
		objs = append(objs, class, gw)
		t.Cleanup(func() { _ = c.Delete(context.Background(), class) })
	}
	for i := range size.httpRoutes {
		name := fmt.Sprintf("hr-%03d", i)
		o := app(ns, name, "")
		o[1].(*discoveryv1.EndpointSlice).Endpoints[0].Addresses = []string{addr(size.ingresses + i)}
		objs = append(objs, o[0], o[1], httpRoute(ns, name, "http", name))
		targets = append(targets, trafficTarget{host: name + ".example.com", path: "/", pod: addr(size.ingresses+i) + ":8080"})
	}
	for _, o := range objs {
		require.NoError(t, c.Create(ctx, o), "creating %T %s", o, o.GetName())
	}
	return targets
}

// trafficArgs are the flags of every replica: the Gateway API controller of the namespace's
// class, with handoverArgs' lease timings.
func trafficArgs(ns string) []string {
	return append(handoverArgs(ns), "--gateway-api-controller-name", "konductor.test/"+ns)
}

// trafficProxy starts the proxy of a Kong emulator, its backends answering as echo servers
// for the addresses trafficApps gives (and nothing else).
func trafficProxy(t *testing.T, kong *kongemu.Emulator) *kongemu.ProxyServer {
	t.Helper()
	ps, err := kong.Proxy(kongemu.ProxyOptions{Resolve: func(host string, port int) http.Handler {
		if !strings.HasPrefix(host, "10.7.") {
			return nil
		}
		return &kongemu.EchoBackend{Pod: fmt.Sprintf("%s:%d", host, port)}
	}}).Start(kongemu.ProxyListen{})
	require.NoError(t, err)
	t.Cleanup(func() { ps.Close() })
	return ps
}

// trafficNode is a Kong node behind the client's load balancer.
type trafficNode struct {
	url   string
	ready func() bool // nil: always; a DB-less node takes traffic once it holds a configuration
}

// trafficLoad sends requests to each target in turn, at a steady rate, to the ready nodes in
// turn (as a Service would, behind readiness), and records every failure.
type trafficLoad struct {
	targets []trafficTarget
	nodes   []trafficNode
	client  *http.Client

	sent     atomic.Int64
	mu       sync.Mutex
	failures []string
	failedBy map[string]int // by target host
	// out are the nodes taken out of rotation (drain), inFlight the requests under way to
	// each node, counted from the moment it is picked.
	out      map[string]bool
	inFlight map[string]int

	stop func()
	done chan struct{}
}

func startTraffic(t *testing.T, rate int, targets []trafficTarget, nodes ...trafficNode) *trafficLoad {
	t.Helper()
	l := &trafficLoad{targets: targets, nodes: nodes, failedBy: map[string]int{}, done: make(chan struct{}),
		out: map[string]bool{}, inFlight: map[string]int{},
		client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
	ctx, cancel := context.WithCancel(context.Background())
	l.stop = cancel
	go func() {
		defer close(l.done)
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		var wg sync.WaitGroup
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				wg.Wait()
				return
			case <-tick.C:
			}
			target := targets[i%len(targets)]
			node := l.pickNode(i)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer l.done1(node)
				l.send(target, node)
			}()
		}
	}()
	t.Cleanup(func() { l.finish() })
	return l
}

func (l *trafficLoad) pickNode(i int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ready []string
	for _, n := range l.nodes {
		if !l.out[n.url] && (n.ready == nil || n.ready()) {
			ready = append(ready, n.url)
		}
	}
	if len(ready) == 0 {
		return ""
	}
	node := ready[i%len(ready)]
	l.inFlight[node]++
	return node
}

// done1 ends a request picked for node.
func (l *trafficLoad) done1(node string) {
	if node == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inFlight[node]--
}

// drain takes node out of rotation and waits for its requests under way, as Kubernetes takes a
// terminating Pod's endpoint out before the Pod stops: a request a client has already sent to
// a node that then restarts is lost whatever the controller does, which is not what is tested.
// restore puts it back (behind its readiness).
func (l *trafficLoad) drain(t *testing.T, node string) {
	t.Helper()
	l.mu.Lock()
	l.out[node] = true
	l.mu.Unlock()
	require.Eventually(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.inFlight[node] == 0
	}, 10*time.Second, time.Millisecond, "the requests under way to %s end", node)
}

func (l *trafficLoad) restore(node string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.out, node)
}

func (l *trafficLoad) send(target trafficTarget, node string) {
	l.sent.Add(1)
	fail := func(format string, args ...any) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.failedBy[target.host]++
		if len(l.failures) < 20 {
			l.failures = append(l.failures, fmt.Sprintf("%s %s%s: ", time.Now().Format("15:04:05.000"), target.host, target.path)+fmt.Sprintf(format, args...))
		}
	}
	if node == "" {
		fail("no Kong node ready")
		return
	}
	req, _ := http.NewRequest(http.MethodGet, node+target.path, nil)
	req.Host = target.host
	res, err := l.client.Do(req)
	if err != nil {
		fail("%v", err)
		return
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		fail("%d %s", res.StatusCode, strings.TrimSpace(string(body)))
		return
	}
	var echo kongemu.EchoResponse
	if err := json.Unmarshal(body, &echo); err != nil || echo.Pod != target.pod {
		fail("answered by %q, want %s", echo.Pod, target.pod)
	}
}

// finish stops the client and waits for the requests under way.
func (l *trafficLoad) finish() {
	l.stop()
	<-l.done
}

// failed is the number of failed requests and the first ones described.
func (l *trafficLoad) failed() (int, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.failedBy {
		n += c
	}
	return n, strings.Join(l.failures, "\n")
}

// waitServed waits until every target answers through every node.
func waitServed(t *testing.T, targets []trafficTarget, nodes []trafficNode, within time.Duration) {
	t.Helper()
	probe := &trafficLoad{failedBy: map[string]int{}, client: &http.Client{Timeout: 5 * time.Second}}
	require.Eventually(t, func() bool {
		for _, n := range nodes {
			for _, tg := range targets {
				before, _ := probe.failed()
				probe.send(tg, n.url)
				if after, _ := probe.failed(); after > before {
					return false
				}
			}
		}
		return true
	}, within, 100*time.Millisecond, "every route answers through the proxy")
}

// requireNoFailedRequest ends the load and requires that every request it sent succeeded.
func requireNoFailedRequest(t *testing.T, l *trafficLoad, what string) {
	t.Helper()
	l.finish()
	n, first := l.failed()
	t.Logf("%s: %d requests sent to %d routes, %d failed", what, l.sent.Load(), len(l.targets), n)
	require.Zero(t, n, "%s: failed requests, the first ones:\n%s", what, first)
	require.Positive(t, l.sent.Load())
}

// trafficSetup is a namespace with the apps of size, a database-mode Kong emulator with its
// proxy, and a replica named first that leads and whose configuration every route answers
// through the proxy.
type trafficSetup struct {
	ns      string
	targets []trafficTarget
	kong    *kongemu.Server
	nodes   []trafficNode
	first   *replica
}

func newTrafficSetup(t *testing.T, size trafficSize, first string, opts manager.Options) *trafficSetup {
	t.Helper()
	s := &trafficSetup{ns: newNamespace(t)}
	s.targets = trafficApps(t, admin, s.ns, size)
	s.kong = startEmulator(t, kongemu.Postgres)
	s.nodes = []trafficNode{{url: trafficProxy(t, s.kong.Emulator).URL}}
	s.first = s.replica(t, first, opts)
	s.first.waitFirstSync(t, 2*time.Minute)
	waitServed(t, s.targets, s.nodes, time.Minute)
	return s
}

// replica starts another replica on the setup's namespace and Kong.
func (s *trafficSetup) replica(t *testing.T, name string, opts manager.Options) *replica {
	return startReplica(t, replicaSpec{name: name, namespace: s.ns, gateways: []string{s.kong.URL}, args: trafficArgs(s.ns), opts: opts})
}

// settle lets the client go on for two sync periods after the last event of a scenario, so
// that a sync the event caused (a first sync, a resync) happens under traffic.
func settle() { time.Sleep(2*syncPeriod + 500*time.Millisecond) }

// The seed: a rolling restart of konductor in database mode. The old replica stops and
// releases its lease; the new one starts cold and takes the lease at once.
func TestTrafficRollingRestart(t *testing.T) {
	parallel(t)
	failed := rollingRestartUnderTraffic(t, func(string) manager.Options { return manager.Options{} })
	require.Zero(t, failed)
}

// The control: the same rolling restart by a replica without the cache barrier, whose store
// is the pre-konductor design (a second store fed by event handlers that start with
// leadership, read without waiting). Its first sync deletes live routes, and requests fail.
func TestTrafficRollingRestartWithoutTheBarrierFails(t *testing.T) {
	parallel(t)
	failed := rollingRestartUnderTraffic(t, func(ns string) manager.Options {
		return manager.Options{
			SkipCacheBarrierForTesting: true,
			SnapshotSourceForTesting: func(c cache.Cache) dataplane.SnapshotSource {
				return newLegacyStore(c, store.Options{Namespaces: []string{ns}, Kinds: store.NewKindSet(store.AllKinds()...)})
			},
		}
	})
	require.Positive(t, failed, "without the barrier a rolling restart must fail requests, or the zero of TestTrafficRollingRestart proves nothing")
}

// rollingRestartUnderTraffic runs the rolling restart, the new replica with the options made
// for the namespace, and returns how many requests failed (the test decides what that must be).
func rollingRestartUnderTraffic(t *testing.T, newOpts func(ns string) manager.Options) int {
	size := trafficSizeOf()
	s := newTrafficSetup(t, size, "old", manager.Options{})
	targets := s.targets
	load := startTraffic(t, size.rate, targets, s.nodes...)
	time.Sleep(500 * time.Millisecond)
	s.first.stop(t)
	fresh := s.replica(t, "new", newOpts(s.ns))
	waitElected(t, fresh, time.Minute)
	fresh.waitFirstSync(t, 2*time.Minute)
	settle()
	load.finish()
	n, first := load.failed()
	t.Logf("rolling restart: %d requests sent to %d routes, %d failed; the first ones:\n%s", load.sent.Load(), len(targets), n, first)
	require.Positive(t, load.sent.Load())
	return n
}

// Leader changes under traffic: a warm standby takes over, alternately after a clean stop
// and after a kill (the lease expires).
func TestTrafficLeaderChanges(t *testing.T) {
	parallel(t)
	size := trafficSizeOf()
	s := newTrafficSetup(t, size, "r00", manager.Options{})
	leader := s.first
	load := startTraffic(t, size.rate, s.targets, s.nodes...)
	for k := 1; k <= size.leaderChanges; k++ {
		// The odd replicas are killed: they keep the lease when stopped.
		standby := s.replica(t, fmt.Sprintf("r%02d", k), manager.Options{KeepLeaseOnCancel: k%2 == 1})
		require.Eventually(t, standby.ctrl.CacheSynced, time.Minute, 5*time.Millisecond, "the standby's cache")
		leader.stop(t) // a kill (lease kept) for odd replicas
		waitElected(t, standby, time.Minute)
		standby.waitFirstSync(t, 2*time.Minute)
		leader = standby
	}
	settle()
	requireNoFailedRequest(t, load, fmt.Sprintf("%d leader changes", size.leaderChanges))
}

// Kong restarts under traffic. DB-less: two nodes behind the client's balancer, one restarts
// empty (a fresh node joining: it takes traffic once konductor has configured it, as its
// readiness probe would say). Database mode: the node loses its database (every Admin API
// request fails) while an app is added; the proxy keeps serving what it holds, and the new
// app is served once the node is back.
func TestTrafficKongRestarts(t *testing.T) {
	parallel(t)
	size := trafficSizeOf()
	t.Run("dbless-fresh-node", func(t *testing.T) {
		ns := newNamespace(t)
		targets := trafficApps(t, admin, ns, size)
		a, b := startEmulator(t, kongemu.DBLess), startEmulator(t, kongemu.DBLess)
		pa, pb := trafficProxy(t, a.Emulator), trafficProxy(t, b.Emulator)
		configured := func(k *kongemu.Server) func() bool {
			return func() bool { return k.ConfigHash() != strings.Repeat("0", 32) }
		}
		nodes := []trafficNode{{url: pa.URL, ready: configured(a)}, {url: pb.URL, ready: configured(b)}}
		r := startReplica(t, replicaSpec{name: "r", namespace: ns, gateways: []string{a.URL, b.URL},
			args: []string{"--leader-elect=false", "--gateway-api-controller-name", "konductor.test/" + ns}})
		r.waitFirstSync(t, 2*time.Minute)
		waitServed(t, targets, nodes, time.Minute)
		load := startTraffic(t, size.rate, targets, nodes...)
		time.Sleep(500 * time.Millisecond)
		load.drain(t, pb.URL)
		b.Restart()
		load.restore(pb.URL) // it takes traffic again once it holds a configuration
		require.Eventually(t, configured(b), time.Minute, 20*time.Millisecond, "konductor configures the fresh node")
		settle()
		requireNoFailedRequest(t, load, "a DB-less node restarted")
	})
	t.Run("database-connection-lost", func(t *testing.T) {
		s := newTrafficSetup(t, size, "r", manager.Options{})
		kong, nodes := s.kong, s.nodes
		load := startTraffic(t, size.rate, s.targets, nodes...)
		kong.InjectFault(kongemu.Fault{Status: http.StatusInternalServerError})
		late := app(s.ns, "late", "late.example.com")
		late[1].(*discoveryv1.EndpointSlice).Endpoints[0].Addresses = []string{"10.7.199.1"}
		createAll(t, late)
		time.Sleep(3 * syncPeriod) // syncs fail meanwhile; the proxy serves what Kong holds
		kong.ClearFaults()
		lateTarget := []trafficTarget{{host: "late.example.com", path: "/", pod: "10.7.199.1:8080"}}
		waitServed(t, lateTarget, nodes, time.Minute)
		settle()
		requireNoFailedRequest(t, load, "the database connection lost for 3 s")
	})
}

// An API server outage under traffic: DB-less, leader election off, the API server stopped for
// the outage and started again. Nothing fails.
func TestTrafficAPIServerOutage(t *testing.T) {
	withOwnAPIServer(t)
	size := trafficSizeOf()
	o := startOwnEnv(t, repoRoot()+"/config/crd")
	ns := "traffic-outage"
	o.createNamespace(t, ns)
	targets := trafficApps(t, o.client, ns, size)
	kong := startEmulator(t, kongemu.DBLess)
	ps := trafficProxy(t, kong.Emulator)
	nodes := []trafficNode{{url: ps.URL}}
	r := startReplica(t, replicaSpec{name: "r", namespace: ns, gateways: []string{kong.URL},
		args: []string{"--leader-elect=false", "--gateway-api-controller-name", "konductor.test/" + ns}, restConfig: o.config})
	r.waitFirstSync(t, 2*time.Minute)
	waitServed(t, targets, nodes, time.Minute)
	load := startTraffic(t, size.rate, targets, nodes...)
	apiServer := o.env.ControlPlane.GetAPIServer()
	o.killAPIServer(t)
	time.Sleep(size.outage)
	require.NoError(t, apiServer.Start())
	late := app(ns, "late", "late.example.com")
	late[1].(*discoveryv1.EndpointSlice).Endpoints[0].Addresses = []string{"10.7.199.2"}
	o.createAll(t, late)
	waitServed(t, []trafficTarget{{host: "late.example.com", path: "/", pod: "10.7.199.2:8080"}}, nodes, 2*time.Minute)
	settle()
	requireNoFailedRequest(t, load, fmt.Sprintf("an API server outage of %s", size.outage))
}
