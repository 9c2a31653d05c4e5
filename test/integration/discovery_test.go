package integration

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongemu"
)

const adminPort = 8444

// hostAddresses adds n addresses of a private range to the loopback interface, for gateways
// that the test lists in an EndpointSlice: the API server refuses loopback (127.0.0.0/8) and
// link-local addresses there, not private ones. Traffic stays on the machine. It needs root
// and the ip command; without them the test is skipped.
func hostAddresses(t *testing.T, n int) []string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("gateway discovery tests add addresses to the loopback interface: they need root")
	}
	ipCmd, err := exec.LookPath("ip")
	if err != nil {
		t.Skip("gateway discovery tests need the ip command (iproute2)")
	}
	// 10.233-10.250.x.y: unlikely to be in use, and unique per test run.
	prefix := fmt.Sprintf("10.%d.%d", 233+mrand.IntN(18), mrand.IntN(256))
	var out []string
	for i := 1; i <= n; i++ {
		addr := fmt.Sprintf("%s.%d", prefix, i)
		if b, err := exec.Command(ipCmd, "addr", "add", addr+"/32", "dev", "lo").CombinedOutput(); err != nil {
			t.Skipf("cannot add %s to the loopback interface (%v: %s)", addr, err, bytes.TrimSpace(b))
		}
		t.Cleanup(func() { _ = exec.Command(ipCmd, "addr", "del", addr+"/32", "dev", "lo").Run() })
		out = append(out, addr)
	}
	return out
}

// adminTLS is a CA and a serving certificate for *.<svc>.<ns>.svc, as Kong's chart makes
// them for gateway discovery. It returns the certificate and the CA's PEM file.
func adminTLS(t *testing.T, svc, ns string) (tls.Certificate, string) {
	t.Helper()
	// No IP SAN: only the server name can match.
	cert, caPEM := servingCert(t, []string{fmt.Sprintf("*.%s.%s.svc", svc, ns)}, nil)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(caFile, caPEM, 0o600))
	return cert, caFile
}

// servingCert is a serving certificate for dnsNames and ips, signed by a CA of its own, and
// that CA's certificate (PEM).
func servingCert(t *testing.T, dnsNames []string, ips []net.IP) (tls.Certificate, []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "test server"},
		DNSNames: dnsNames, IPAddresses: ips,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
}

// gateway is one Kong Admin API listener at addr:8444 over an emulator (several gateways may
// share one emulator: Kongs sharing a database). It records the writes it received.
type gateway struct {
	addr string
	emu  *kongemu.Emulator
	srv  *http.Server

	mu     sync.Mutex
	writes []string // "METHOD path id/name" of each write
}

func startGateway(t *testing.T, emu *kongemu.Emulator, addr string, cert tls.Certificate) *gateway {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, fmt.Sprint(adminPort)))
	require.NoError(t, err)
	g := &gateway{addr: addr, emu: emu}
	g.srv = &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		_ = g.srv.Serve(tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}))
	}()
	t.Cleanup(func() { _ = g.srv.Close() })
	return g
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var ent struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		}
		_ = json.Unmarshal(body, &ent)
		g.mu.Lock()
		g.writes = append(g.writes, fmt.Sprintf("%s %s %s/%s", r.Method, r.URL.Path, ent.ID, ent.Name))
		g.mu.Unlock()
	}
	g.emu.ServeHTTP(w, r)
}

func (g *gateway) writeLog() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.writes...)
}

func (g *gateway) url() string { return fmt.Sprintf("https://%s:%d", g.addr, adminPort) }

// adminService creates the admin Service and its EndpointSlice listing gateways.
func adminService(t *testing.T, ns string, gws ...*gateway) *discoveryv1.EndpointSlice {
	t.Helper()
	name, port := "admin-tls", int32(adminPort)
	createAll(t, []client.Object{&corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kong-admin"},
		Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Name: name, Port: port, TargetPort: intstr.FromInt32(port)}}},
	}})
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: "kong-admin-1", Labels: map[string]string{discoveryv1.LabelServiceName: "kong-admin"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port}},
	}
	for _, g := range gws {
		es.Endpoints = append(es.Endpoints, gatewayEndpoint(ns, g))
	}
	require.NoError(t, admin.Create(context.Background(), es))
	return es
}

func gatewayEndpoint(ns string, g *gateway) discoveryv1.Endpoint {
	ready := true
	return discoveryv1.Endpoint{Addresses: []string{g.addr}, Conditions: discoveryv1.EndpointConditions{Ready: &ready},
		TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "kong-" + strings.ReplaceAll(g.addr, ".", "-")}}
}

// terminate marks g's endpoint as Kubernetes does when its Pod is deleted.
func terminate(es *discoveryv1.EndpointSlice, g *gateway) {
	no, yes := false, true
	for i, e := range es.Endpoints {
		if e.Addresses[0] == g.addr {
			es.Endpoints[i].Conditions = discoveryv1.EndpointConditions{Ready: &no, Serving: &no, Terminating: &yes}
		}
	}
}

func discoveryReplica(t *testing.T, ns, caFile, probe string) *replica {
	return startReplica(t, replicaSpec{name: "discovery", namespace: ns, args: []string{
		"--kong-admin-svc", ns + "/kong-admin", "--kong-admin-ca-cert-file", caFile,
		"--health-probe-bind-address", probe,
		// Neither the resync nor the readiness checks' ticks may explain what the test sees:
		// a change of the EndpointSlice must act at once.
		"--proxy-sync-seconds", "3600", "--gateway-discovery-readiness-check-interval", "1h",
	}})
}

func routesOf(e *kongemu.Emulator) int { return len(e.Entities("routes")) }

// DB-less gateways discovered from the admin Service's EndpointSlice, reached over TLS with
// KIC's server name and the --kong-admin-ca-cert-file CA: all get the configuration; one that
// appears gets it at once; one whose Pod terminates is dropped; one that dies holds no other
// back.
func TestGatewayDiscoveryDBLess(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	addrs := hostAddresses(t, 4)
	cert, caFile := adminTLS(t, "kong-admin", ns)
	var gws []*gateway
	for _, a := range addrs {
		gws = append(gws, startGateway(t, kongemu.New(kongemu.Options{Mode: kongemu.DBLess}), a, cert))
	}
	a, b, c, d := gws[0], gws[1], gws[2], gws[3]
	apps(t, ns, 3)
	es := adminService(t, ns, a, b, c)

	probe := freeAddr(t)
	r := discoveryReplica(t, ns, caFile, probe)
	r.waitFirstSync(t, time.Minute)
	require.True(t, r.logs.contains("leader election decided", "gateway discovery"), r.logs.String())
	for _, g := range []*gateway{a, b, c} {
		require.Equal(t, 3, routesOf(g.emu), g.url())
	}
	require.Eventually(t, func() bool { return readyz(probe) == http.StatusOK }, 30*time.Second, 20*time.Millisecond, "ready: every gateway took the configuration")

	// A new gateway gets the configuration at once: no resync or check period explains it.
	es.Endpoints = append(es.Endpoints, gatewayEndpoint(ns, d))
	require.NoError(t, admin.Update(context.Background(), es))
	require.Eventually(t, func() bool { return routesOf(d.emu) == 3 }, 30*time.Second, 20*time.Millisecond, "the new gateway got the configuration")

	// b's Pod terminates: b is dropped and gets no further change.
	terminate(es, b)
	require.NoError(t, admin.Update(context.Background(), es))
	require.Eventually(t, func() bool { return r.logs.contains("gateway dropped", b.url()) }, 30*time.Second, 20*time.Millisecond)
	createAll(t, app(ns, "late", "late.example.com"))
	for _, g := range []*gateway{a, c, d} {
		require.Eventually(t, func() bool { return routesOf(g.emu) == 4 }, 30*time.Second, 20*time.Millisecond, g.url())
	}
	require.Equal(t, 3, routesOf(b.emu), "a dropped gateway gets no change")

	// c dies: the others keep getting changes.
	require.NoError(t, c.srv.Close())
	createAll(t, app(ns, "later", "later.example.com"))
	for _, g := range []*gateway{a, d} {
		require.Eventually(t, func() bool { return routesOf(g.emu) == 5 }, 30*time.Second, 20*time.Millisecond, g.url())
	}
	require.Equal(t, http.StatusOK, readyz(probe))
}

// A standby replica with discovered gateways learns their router (GET / of each, as KIC does
// on every replica at start) before its warm translation, while the leader alone writes:
// before, only the leader's discovery asked, so a standby translated, and its webhook
// reviewed, for the traditional router.
func TestGatewayDiscoveryStandbyLearnsTheRouter(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	addrs := hostAddresses(t, 2)
	cert, caFile := adminTLS(t, "kong-admin", ns)
	var gws []*gateway
	for _, a := range addrs {
		gws = append(gws, startGateway(t, kongemu.New(kongemu.Options{Mode: kongemu.DBLess, RouterFlavor: kongemu.RouterExpressions}), a, cert))
	}
	apps(t, ns, 2)
	adminService(t, ns, gws...)

	leader := discoveryReplica(t, ns, caFile, freeAddr(t))
	leader.waitFirstSync(t, time.Minute)
	written := map[*gateway]int{}
	for _, g := range gws {
		written[g] = len(g.writeLog())
	}
	standby := startReplica(t, replicaSpec{name: "standby", namespace: ns, args: []string{
		"--kong-admin-svc", ns + "/kong-admin", "--kong-admin-ca-cert-file", caFile,
		"--proxy-sync-seconds", "3600", "--gateway-discovery-readiness-check-interval", "1h",
	}})
	for _, g := range gws {
		require.Eventually(t, func() bool {
			return standby.logs.contains("router flavor learned from a discovered gateway", g.url(), "expressions")
		}, 30*time.Second, 20*time.Millisecond, standby.logs.String())
	}
	select {
	case <-standby.ctrl.Elected():
		t.Fatal("the second replica leads")
	default:
	}
	for _, g := range gws {
		require.Equal(t, written[g], len(g.writeLog()), "the standby writes nothing to %s", g.url())
	}
}

// A gateway discovered on another router than the others (a Kong moved off the expressions
// router Pod by Pod) is not sent the configuration rendered for the expressions router, which
// it would refuse whole: it waits for the round its answer asked for, and takes that one.
func TestGatewayDiscoveryNewGatewayOnAnotherRouter(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	addrs := hostAddresses(t, 2)
	cert, caFile := adminTLS(t, "kong-admin", ns)
	expr := startGateway(t, kongemu.New(kongemu.Options{Mode: kongemu.DBLess, RouterFlavor: kongemu.RouterExpressions}), addrs[0], cert)
	compat := startGateway(t, kongemu.New(kongemu.Options{Mode: kongemu.DBLess, RouterFlavor: kongemu.RouterTraditionalCompatible}), addrs[1], cert)
	apps(t, ns, 2)
	es := adminService(t, ns, expr)

	r := discoveryReplica(t, ns, caFile, freeAddr(t))
	r.waitFirstSync(t, time.Minute)
	require.Equal(t, 2, routesOf(expr.emu))
	require.NotNil(t, expr.emu.Entities("routes")[0]["expression"], "rendered for the expressions router")

	es.Endpoints = append(es.Endpoints, gatewayEndpoint(ns, compat))
	require.NoError(t, admin.Update(context.Background(), es))
	require.Eventually(t, func() bool { return routesOf(compat.emu) == 2 }, 30*time.Second, 20*time.Millisecond, r.logs.String())
	require.Nil(t, compat.emu.Entities("routes")[0]["expression"], "rendered for its router")
	require.False(t, r.logs.contains("gateway rejected the configuration", compat.url()), r.logs.String())
	require.Eventually(t, func() bool { return routesOf(expr.emu) == 2 && expr.emu.Entities("routes")[0]["expression"] == nil },
		30*time.Second, 20*time.Millisecond, "the same configuration for both: the traditional fields, which the expressions router takes too")
}

// Gateways sharing one database (three listeners over one emulator): exactly one receives the
// writes; when it goes, another takes over, and nothing is written twice.
func TestGatewayDiscoveryDatabaseHasOneWriter(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	addrs := hostAddresses(t, 3)
	cert, caFile := adminTLS(t, "kong-admin", ns)
	db := kongemu.New(kongemu.Options{Mode: kongemu.Postgres})
	var gws []*gateway
	for _, a := range addrs {
		gws = append(gws, startGateway(t, db, a, cert))
	}
	apps(t, ns, 3)
	es := adminService(t, ns, gws...)

	r := discoveryReplica(t, ns, caFile, freeAddr(t))
	r.waitFirstSync(t, time.Minute)
	require.Equal(t, 3, routesOf(db))
	writers := func() []*gateway {
		var out []*gateway
		for _, g := range gws {
			if len(g.writeLog()) > 0 {
				out = append(out, g)
			}
		}
		return out
	}
	require.Len(t, writers(), 1, "one gateway receives the writes")
	first := writers()[0]
	require.Equal(t, gws[0], first, "the first ready one by URL")

	// The writer's Pod goes: another takes over and writes the next change.
	terminate(es, first)
	require.NoError(t, admin.Update(context.Background(), es))
	require.Eventually(t, func() bool {
		return r.logs.contains("database writer chosen", `"previous"="`+first.url()+`"`)
	},
		30*time.Second, 20*time.Millisecond, r.logs.String())
	before := len(first.writeLog())
	createAll(t, app(ns, "late", "late.example.com"))
	require.Eventually(t, func() bool { return routesOf(db) == 4 }, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, before, len(first.writeLog()), "the old writer gets no write")
	require.Len(t, writers(), 2, "one more gateway has written: the new writer")

	// Nothing is written twice: no entity write appears on two gateways.
	seen := map[string]string{}
	var dup []string
	for _, g := range gws {
		for _, w := range g.writeLog() {
			if other, ok := seen[w]; ok && other != g.addr {
				dup = append(dup, w)
			}
			seen[w] = g.addr
		}
	}
	sort.Strings(dup)
	require.Empty(t, dup, "entities written by both writers")
}
