package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/config"
	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/manager"
)

// logBuffer keeps a replica's log lines, for assertions about what it said.
type logBuffer struct {
	mu    sync.Mutex
	lines []string
	t     testing.TB
	name  string
	ended atomic.Bool // the test is over: t.Log would panic
}

func (b *logBuffer) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		line := prefix + " " + args
		b.mu.Lock()
		b.lines = append(b.lines, line)
		b.mu.Unlock()
		if testing.Verbose() && !b.ended.Load() {
			b.t.Log(b.name, line)
		}
	}, funcr.Options{Verbosity: 1})
}

// count is the number of lines holding every one of parts.
func (b *logBuffer) count(parts ...string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, l := range b.lines {
		all := true
		for _, p := range parts {
			if !strings.Contains(l, p) {
				all = false
				break
			}
		}
		if all {
			n++
		}
	}
	return n
}

func (b *logBuffer) contains(parts ...string) bool { return b.count(parts...) > 0 }

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var buf bytes.Buffer
	for _, l := range b.lines {
		buf.WriteString(l)
		buf.WriteByte('\n')
	}
	return buf.String()
}

// replica is one konductor controller running in this process.
type replica struct {
	name     string
	ctrl     *manager.Controller
	logs     *logBuffer
	ctx      context.Context
	cancel   context.CancelFunc
	done     chan error
	started  time.Time
	stopOnce sync.Once

	firstMu   sync.Mutex
	firstAt   time.Time
	firstSeen chan struct{} // closed once firstAt is set
}

type replicaSpec struct {
	name       string
	namespace  string // the only namespace watched
	gateways   []string
	args       []string // more flags
	environ    []string // the process environment the controller reads (CONTROLLER_*); none when nil
	restConfig *rest.Config
	opts       manager.Options
}

// startReplica assembles and starts a controller; it stops with the test.
func startReplica(t testing.TB, spec replicaSpec) *replica {
	t.Helper()
	args := []string{
		"--kong-admin-url", strings.Join(spec.gateways, ","),
		"--watch-namespace", spec.namespace,
		"--election-namespace", spec.namespace,
		"--metrics-bind-address", "0",
		"--health-probe-bind-address", "0",
		"--proxy-sync-seconds", "1",
	}
	cfg, err := config.ParseEnviron(append(args, spec.args...), spec.environ)
	require.NoError(t, err)
	logs := &logBuffer{t: t, name: spec.name}
	t.Cleanup(func() { logs.ended.Store(true) }) // registered first, so it runs last
	opts := spec.opts
	opts.Logger = logs.logger()
	opts.RestConfig = spec.restConfig
	if opts.RestConfig == nil {
		opts.RestConfig = adminConfig
	}
	ctx, cancel := context.WithCancel(context.Background())
	c, err := manager.New(ctx, cfg, opts)
	require.NoError(t, err)
	r := &replica{name: spec.name, ctrl: c, logs: logs, ctx: ctx, cancel: cancel, firstSeen: make(chan struct{}), done: make(chan error, 1), started: time.Now()}
	go func() { r.done <- c.Start(ctx) }()
	go func() {
		select {
		case <-c.FirstSyncDone():
			r.firstMu.Lock()
			r.firstAt = time.Now()
			r.firstMu.Unlock()
			close(r.firstSeen)
		case <-ctx.Done():
		}
	}()
	t.Cleanup(func() {
		r.stop(t)
		if t.Failed() && !testing.Verbose() {
			t.Logf("%s log:\n%s", r.name, r.logs)
		}
	})
	return r
}

// stop cancels the replica and waits until it has returned (with leader election, after it
// released its lease unless KeepLeaseOnCancel).
func (r *replica) stop(t testing.TB) {
	r.stopOnce.Do(func() {
		r.cancel()
		select {
		case err := <-r.done:
			require.NoError(t, err, "%s stopped with an error", r.name)
		case <-time.After(30 * time.Second):
			t.Errorf("%s did not stop", r.name)
		}
	})
}

// firstSyncAt is when the first sync completed, as seen by the test (zero before).
func (r *replica) firstSyncAt() time.Time {
	r.firstMu.Lock()
	defer r.firstMu.Unlock()
	return r.firstAt
}

func (r *replica) waitFirstSync(t testing.TB, within time.Duration) time.Duration {
	t.Helper()
	select {
	case <-r.firstSeen:
		return r.firstSyncAt().Sub(r.started)
	case <-time.After(within):
		t.Fatalf("%s: no first sync within %s", r.name, within)
	}
	return 0
}

func startEmulator(t testing.TB, mode kongemu.Mode) *kongemu.Server {
	t.Helper()
	srv, err := kongemu.New(kongemu.Options{Mode: mode}).Start()
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	return srv
}

// newNamespace creates a namespace of its own for a test.
func newNamespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "it-"}}
	require.NoError(t, admin.Create(context.Background(), ns))
	return ns.Name
}

// app returns an Ingress routing host to a Service, the Service and its EndpointSlice.
func app(ns, name, host string) []client.Object {
	class := "kong"
	prefix := netv1.PathTypePrefix
	ready := true
	port := int32(8080)
	return []client.Object{
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
		},
		&discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Port: &port}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		},
		&netv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: netv1.IngressSpec{IngressClassName: &class, Rules: []netv1.IngressRule{{
				Host: host,
				IngressRuleValue: netv1.IngressRuleValue{HTTP: &netv1.HTTPIngressRuleValue{Paths: []netv1.HTTPIngressPath{{
					Path: "/", PathType: &prefix,
					Backend: netv1.IngressBackend{Service: &netv1.IngressServiceBackend{Name: name, Port: netv1.ServiceBackendPort{Number: 80}}},
				}}}},
			}}},
		},
	}
}

func createAll(t testing.TB, objs []client.Object) {
	t.Helper()
	for _, o := range objs {
		require.NoError(t, admin.Create(context.Background(), o), "creating %T %s", o, o.GetName())
	}
}

// apps creates n apps app-0000 ... in ns.
func apps(t *testing.T, ns string, n int) {
	t.Helper()
	for i := range n {
		name := fmt.Sprintf("app-%04d", i)
		createAll(t, app(ns, name, name+".example.com"))
	}
}

// routeName is the Kong route of app name in ns (translation-rules.md §3.3).
func routeName(ns, name string) string {
	return fmt.Sprintf("%s.%s.%s.%s.example.com.80", ns, name, name, name)
}

// parallel runs the test beside the other parallel ones (after every test that is not): it
// uses namespaces of its own and its own Kong emulators, creates no cluster-scoped object
// another test reads (a GatewayClass of its own controller name is its own), and does not
// stop or reconfigure the API server. Most of an integration test is waiting (for informers,
// leases, syncs), so running them side by side (test-integration.sh: -parallel 6) takes
// minutes off `make test`. KONDUCTOR_SERIAL=1 runs every test alone.
func parallel(t *testing.T) {
	if os.Getenv("KONDUCTOR_SERIAL") == "" {
		t.Parallel()
	}
}

// ownAPIServers lets one test at a time start a kube-apiserver and etcd of its own (the local
// environment's tests, the end-to-end benchmark): they would race for the local environment's
// fixed ports, and two more control planes at once starve two cores.
var ownAPIServers sync.Mutex

// withOwnAPIServer is parallel for a test that starts its own API server: beside the other
// tests, one of its kind at a time.
func withOwnAPIServer(t *testing.T) {
	parallel(t)
	ownAPIServers.Lock()
	t.Cleanup(ownAPIServers.Unlock)
}
