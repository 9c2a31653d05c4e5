package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/store"
)

// apiServerOutage is how long the API server stays stopped in TestAPIServerOutage;
// KONDUCTOR_OUTAGE_SECONDS overrides it (`make test-faults` runs the 30 s). 10 s proves
// the same: client-go's reflector backoff (800 ms doubling, full jitter) has every informer
// several seconds deep into it by then.
const apiServerOutage = 10 * time.Second

func outageDuration(t *testing.T) time.Duration {
	v := os.Getenv("KONDUCTOR_OUTAGE_SECONDS")
	if v == "" {
		return apiServerOutage
	}
	secs, err := strconv.Atoi(v)
	require.NoError(t, err, "KONDUCTOR_OUTAGE_SECONDS")
	return time.Duration(secs) * time.Second
}

// ownEnv is an API server and etcd of a test's own, for tests that stop the API server or
// remove CRDs, which the shared one must not see. The API server's certificates live in a
// folder of the test's, so that it restarts on the same port with the same certificates.
type ownEnv struct {
	env    *envtest.Environment
	config *rest.Config
	client client.Client
}

func startOwnEnv(t *testing.T, crdPaths ...string) *ownEnv {
	t.Helper()
	dir, err := assets()
	require.NoError(t, err)
	e := &envtest.Environment{BinaryAssetsDirectory: dir, CRDDirectoryPaths: crdPaths, ErrorIfCRDPathMissing: len(crdPaths) > 0}
	e.ControlPlane.GetAPIServer().CertDir = t.TempDir()
	// A stop is a kill: SIGTERM, then SIGKILL after a second. kube-apiserver's own graceful
	// termination, with the controller's watches open, outlasts envtest's stop timeout.
	e.ControlPlaneStopTimeout = time.Second
	cfg, err := e.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Stop() })
	c, err := client.New(cfg, client.Options{Scheme: store.NewScheme()})
	require.NoError(t, err)
	return &ownEnv{env: e, config: cfg, client: c}
}

func (o *ownEnv) createAll(t *testing.T, objs []client.Object) {
	t.Helper()
	for _, obj := range objs {
		require.NoError(t, o.client.Create(context.Background(), obj), "creating %T %s", obj, obj.GetName())
	}
}

// pushRecorder serves an emulator and records, after every POST /config, how many entities of
// each type the emulator holds: the history of what Kong held, push by push.
type pushRecorder struct {
	kong *kongemu.Emulator
	srv  *httptest.Server
	mu   sync.Mutex
	held []map[string]int
}

func startPushRecorder(t *testing.T) *pushRecorder {
	t.Helper()
	p := &pushRecorder{kong: kongemu.New(kongemu.Options{Mode: kongemu.DBLess})}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.kong.ServeHTTP(w, r)
		if r.Method == http.MethodPost && r.URL.Path == "/config" {
			_, _ = io.Copy(io.Discard, r.Body)
			counts := p.kong.Counts()
			p.mu.Lock()
			p.held = append(p.held, counts)
			p.mu.Unlock()
		}
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// last is how many entities of the types named Kong held after the last push recorded (-1
// before any).
func (p *pushRecorder) last(types ...string) int {
	h := p.history(types...)
	if len(h) == 0 {
		return -1
	}
	return h[len(h)-1]
}

// history is, push by push, how many entities of the types named Kong held (all types when
// none is named).
func (p *pushRecorder) history(types ...string) []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]int, 0, len(p.held))
	for _, counts := range p.held {
		n := 0
		for typ, c := range counts {
			if len(types) == 0 || slices.Contains(types, typ) {
				n += c
			}
		}
		out = append(out, n)
	}
	return out
}

// The case (c): DB-less, leader election off (KIC's choice for --kong-admin-url), the
// API server stopped for apiServerOutage and started again on the same port and certificates,
// etcd kept. The controller stays up, says in its log and metrics that the API server is
// gone, never pushes a configuration holding fewer entities than Kong held, and a change made
// after the server is back reaches Kong (how long that took is logged, and recorded in
// docs/troubleshooting.md; the informers list again within apiProbeInterval of the return,
// not after client-go's backoff of up to a minute).
func TestAPIServerOutage(t *testing.T) {
	o := startOwnEnv(t, filepath.Join(repoRoot(), "config", "crd"))
	ns := "outage"
	o.createNamespace(t, ns)
	for i := range 5 {
		name := fmt.Sprintf("app-%04d", i)
		o.createAll(t, app(ns, name, name+".example.com"))
	}
	kong := startPushRecorder(t)
	r := startReplica(t, replicaSpec{name: "r1", namespace: ns, gateways: []string{kong.srv.URL},
		args: []string{"--leader-elect=false"}, restConfig: o.config})
	require.Eventually(t, func() bool { return kong.last("routes") == 5 }, time.Minute, 20*time.Millisecond)
	before := kong.history()
	held := before[len(before)-1]

	apiServer := o.env.ControlPlane.GetAPIServer()
	o.killAPIServer(t)
	require.Eventually(t, func() bool {
		return metricValue(t, "konductor_kubernetes_api_reachable", nil) == 0 &&
			r.logs.contains("Kubernetes API server unreachable")
	}, 30*time.Second, 50*time.Millisecond, "the outage is in the log and the metrics")
	require.Zero(t, metricValue(t, "konductor_kubernetes_watch_up", map[string]string{"kind": "Ingress"}))
	// Rounds go on during the outage from the cache, which still holds every object: the
	// periodic resync translates it and finds the configuration Kong already holds.
	translations := metricValue(t, "ingress_controller_translation_count", nil)
	pushes := len(kong.history())
	time.Sleep(outageDuration(t)) // the outage lasts; nothing is measured over it
	require.Greater(t, metricValue(t, "ingress_controller_translation_count", nil), translations, "rounds ran during the outage")
	require.Len(t, kong.history(), pushes, "nothing new to push during the outage: the translation was Kong's configuration")
	require.NoError(t, apiServer.Start())
	back := time.Now()

	o.createAll(t, app(ns, "after", "after.example.com"))
	require.Eventually(t, func() bool { return routesOf(kong.kong) == 6 }, 2*time.Minute, 10*time.Millisecond,
		"a change made after the server is back reaches Kong")
	t.Logf("change made after the API server came back reached Kong %s after its return (outage %s)",
		time.Since(back).Round(time.Millisecond), outageDuration(t))
	require.Eventually(t, func() bool { return metricValue(t, "konductor_kubernetes_api_reachable", nil) == 1 },
		30*time.Second, 50*time.Millisecond)
	require.True(t, r.logs.contains("Kubernetes API server answers again", "watchesDown", "Ingress"), "the log names the watches that were down")
	require.Equal(t, 1.0, metricValue(t, "konductor_kubernetes_watch_up", map[string]string{"kind": "Ingress"}))

	select {
	case err := <-r.done:
		t.Fatalf("the controller stopped during the outage: %v", err)
	default:
	}
	for i, n := range kong.history() {
		require.GreaterOrEqual(t, n, held, "push %d left Kong holding fewer entities (%v)", i, kong.history())
	}
}

func (o *ownEnv) createNamespace(t *testing.T, name string) {
	t.Helper()
	require.NoError(t, o.client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
}

// killAPIServer stops the API server (SIGTERM, SIGKILL a second later) and waits until its
// port is closed, so that it can start again on it.
func (o *ownEnv) killAPIServer(t *testing.T) {
	t.Helper()
	apiServer := o.env.ControlPlane.GetAPIServer()
	if err := apiServer.Stop(); err != nil {
		require.Contains(t, err.Error(), "timeout waiting for process kube-apiserver to stop") // killed
	}
	addr := apiServer.SecureServing.Address + ":" + apiServer.SecureServing.Port
	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil
	}, 30*time.Second, 50*time.Millisecond, "the API server's port closes")
}
