package integration

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/conformance"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	echopb "sigs.k8s.io/gateway-api/conformance/echo-basic/grpcechoserver"
	"sigs.k8s.io/gateway-api/conformance/tests"
	conformanceconfig "sigs.k8s.io/gateway-api/conformance/utils/config"
	grpcconf "sigs.k8s.io/gateway-api/conformance/utils/grpc"
	"sigs.k8s.io/gateway-api/conformance/utils/roundtripper"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/gateway-api/pkg/features"

	"github.com/konductor/konductor/internal/kongemu"
	konformance "github.com/konductor/konductor/test/conformance"
)

// conformanceNamespaces are the namespaces the suite's base manifests and the tests that run
// here use; the controller watches only these, so that other tests' leftovers are not its
// business.
var conformanceNamespaces = []string{
	"gateway-conformance-infra", "gateway-conformance-app-backend", "gateway-conformance-web-backend",
	"gateway-api-routes-allowed-ns", "gateway-api-routes-not-allowed-ns", "not-the-namespace-youre-looking-for",
	// ListenerSet's tests.
	"gateway-api-listenerset-not-allowed-ns", "gateway-api-listenerset-selector-allowed-ns", "gateway-api-listenerset-selector-not-allowed-ns",
	"gateway-api-listener-sets-test-reference-grant-ns", "gateway-api-ls-cross-ns",
}

// The Gateway API conformance suite (sigs.k8s.io/gateway-api/conformance, GATEWAY-HTTP,
// GATEWAY-GRPC, GATEWAY-TLS, GATEWAY-TCP and GATEWAY-UDP profiles) against konductor on the real API server with the
// Kong emulator as its gateway. The suite's requests go to the Gateways' address, which its
// client's dialer sends to the emulator's proxy at the listen the publish Service gives the
// Gateway port (conformance_ports_test.go: a plain listen per HTTP port, the TLS one for the
// HTTPS ports); the proxy routes them as Kong does over what konductor configured and hands
// them to the Pod whose address the route's target is, answered in process as the suite's echo
// server answers (HTTP, or gRPC for its gRPC backends). The TCP, TLS and UDP clients dial the
// Gateways' address themselves, where the emulator's stream proxy listens
// (conformance_streams_test.go). Deployments, Pods and EndpointSlices
// of the echo backends are made through the API (backendsReady), as there is no kubelet nor
// controller manager.
func TestGatewayAPIConformance(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	const controller = "konductor.test/conformance"
	className := "konductor-conformance"
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: className},
		Spec: gatewayv1.GatewayClassSpec{ControllerName: controller}}
	require.NoError(t, admin.Create(ctx, class))
	t.Cleanup(func() { _ = admin.Delete(context.Background(), class) })

	flavor := os.Getenv("KONDUCTOR_CONFORMANCE_ROUTER")
	if flavor == "" {
		flavor = kongemu.RouterTraditionalCompatible
	}
	proxyListen, _, _, _ := conformanceProxyListen()
	kong, err := kongemu.New(kongemu.Options{Mode: kongemu.DBLess, RouterFlavor: flavor, ProxyListen: proxyListen, StreamListen: conformanceStreamListens}).Start()
	require.NoError(t, err)
	t.Cleanup(func() { kong.Close() })
	proxy := conformanceProxy(t, kong.Emulator)
	createPublishServices(t, conformanceNamespaces[0])
	r := startReplica(t, replicaSpec{name: "conformance", namespace: conformanceNamespaces[0], gateways: []string{kong.URL}, args: []string{
		"--leader-elect=false", "--watch-namespace", strings.Join(conformanceNamespaces, ","),
		"--gateway-api-controller-name", controller, "--publish-status-address", conformanceAddress,
		// Kong's ports (conformance_ports_test.go); its address is the one above.
		"--publish-service", conformanceNamespaces[0] + "/" + conformanceProxyService,
		"--publish-service-udp", conformanceNamespaces[0] + "/" + conformanceStreamsService,
		"--publish-status-address-udp", conformanceAddress,
		// KIC's gate for TCPRoute, TLSRoute and UDPRoute (and BackendTLSPolicy).
		"--feature-gates=GatewayAlpha=true",
	}})
	r.waitFirstSync(t, time.Minute)
	// The suite reads the features to test from the class's status.supportedFeatures, which
	// konductor writes (gatewayapi.SupportedFeatures) once it has learnt the router flavor.
	var declared []gatewayv1.SupportedFeature
	require.Eventually(t, func() bool {
		var got gatewayv1.GatewayClass
		if admin.Get(ctx, client.ObjectKeyFromObject(class), &got) != nil {
			return false
		}
		declared = got.Status.SupportedFeatures
		return len(declared) > 0
	}, time.Minute, 50*time.Millisecond, "the class's supportedFeatures")
	t.Logf("router %s: the class declares %d features", flavor, len(declared))
	readyDone := make(chan struct{})
	go func() { defer close(readyDone); backendsReady(ctx, admin, conformanceNamespaces, 200*time.Millisecond) }()
	t.Cleanup(func() { cancel(); <-readyDone })

	restConfig := rest.CopyConfig(adminConfig) // the suite sets its user agent per test
	clientOptions := client.Options{Scheme: konformance.Scheme()}
	c, err := client.New(restConfig, clientOptions)
	require.NoError(t, err)
	cs, err := clientset.NewForConfig(restConfig)
	require.NoError(t, err)
	timeouts := conformanceconfig.DefaultTimeoutConfig()
	conformanceconfig.SetupTimeoutConfig(&timeouts)
	opts := suite.ConformanceOptions{
		ConfigurableOptions: suite.ConfigurableOptions{
			GatewayClassName:     className,
			CleanupBaseResources: false, // no namespace controller: a deleted namespace stays Terminating
			CleanupTestResources: true,
			ConformanceProfiles: []suite.ConformanceProfileName{suite.GatewayHTTPConformanceProfileName, suite.GatewayGRPCConformanceProfileName,
				suite.GatewayTLSConformanceProfileName, suite.GatewayTCPConformanceProfileName, suite.GatewayUDPConformanceProfileName},
			// Empty: inferred from the class's status. KONDUCTOR_CONFORMANCE_FEATURES adds
			// features to try before declaring them (the class's are then listed here too).
			SupportedFeatures: triedFeatures(declared),
			SkipTests:         konformance.SkippedNames(),
			TimeoutConfig:     timeouts,
			Implementation:    confv1.Implementation{Organization: "konductor", Project: "konductor", URL: "https://github.com/konductor/konductor", Version: conformanceVersion(), Contact: []string{"konductor"}},
			Mode:              "router-" + flavor,
		},
		RoundTripper:    &roundtripper.DefaultRoundTripper{TimeoutConfig: timeouts, CustomDialContext: proxy.dial},
		GRPCClient:      &conformanceGRPCClient{dial: proxy.dial},
		WebSocketDialer: &conformanceWebSocketDialer{dial: proxy.dial},
		Client:          c,
		ClientOptions:   clientOptions,
		Clientset:       cs,
		RestConfig:      restConfig,
		ManifestFS:      []fs.FS{&conformance.Manifests},
	}
	// GatewayStaticAddresses: Kong is published at --publish-status-address only.
	opts.UsableNetworkAddresses, opts.UnusableNetworkAddresses = konformance.StaticAddresses(conformanceAddress)
	cSuite, err := suite.NewConformanceTestSuite(opts)
	require.NoError(t, err)
	// The report, once the parallel tests are done too (cleanups run last first: this one
	// after the one Run registers, which ends the run).
	t.Cleanup(func() {
		report, err := cSuite.Report()
		require.NoError(t, err)
		t.Log("conformance: " + conformanceSummary(report))
		require.NoError(t, konformance.WriteReport(report))
	})
	run := konformance.Scheduled(onlyTests(tests.ConformanceTests))
	cSuite.Setup(t, run)
	require.NoError(t, cSuite.Run(t, run))
}

// onlyTests are the tests whose ShortName starts with one of the comma-separated prefixes of
// KONDUCTOR_CONFORMANCE_ONLY (all of them without it), to run one feature's tests while
// working on it, or two features' tests side by side.
func onlyTests(all []suite.ConformanceTest) []suite.ConformanceTest {
	only := os.Getenv("KONDUCTOR_CONFORMANCE_ONLY")
	if only == "" {
		return all
	}
	var out []suite.ConformanceTest
	for _, ct := range all {
		for _, prefix := range strings.Split(only, ",") {
			if prefix != "" && strings.HasPrefix(ct.ShortName, prefix) {
				out = append(out, ct)
				break
			}
		}
	}
	return out
}

// conformanceSummary is one line per profile: how many of its tests passed, failed, were
// skipped, and which failed.
func conformanceSummary(report *confv1.ConformanceReport) string {
	var b strings.Builder
	for _, p := range report.ProfileReports {
		core := p.Core
		fmt.Fprintf(&b, "%s core: %d passed, %d failed, %d skipped", p.Name, core.Statistics.Passed, core.Statistics.Failed, core.Statistics.Skipped)
		failed := append([]string(nil), core.FailedTests...)
		if p.Extended != nil {
			fmt.Fprintf(&b, "; extended: %d passed, %d failed, %d skipped", p.Extended.Statistics.Passed, p.Extended.Statistics.Failed, p.Extended.Statistics.Skipped)
			failed = append(failed, p.Extended.FailedTests...)
		}
		sort.Strings(failed)
		if len(failed) > 0 {
			fmt.Fprintf(&b, "; failed: %s", strings.Join(failed, ", "))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// conformanceGateway is the emulator's proxy as the suite's clients reach it.
type conformanceGateway struct {
	server *kongemu.ProxyServer
}

// conformanceProxy serves the emulator's proxy for the suite: a target's address is a Pod's
// (fakePods), answered by an echo server of that Pod.
func conformanceProxy(t *testing.T, kong *kongemu.Emulator) *conformanceGateway {
	t.Helper()
	var grpcServers sync.Map // pod address -> *grpc.Server
	p := kong.Proxy(kongemu.ProxyOptions{Resolve: func(host string, port int) http.Handler {
		pod, ok := fakePods.pod(host)
		if !ok {
			return nil
		}
		if pod.GRPC {
			if s, ok := grpcServers.Load(host); ok {
				return s.(*grpc.Server)
			}
			s := grpc.NewServer()
			echopb.RegisterGrpcEchoServer(s, &grpcEcho{pod: pod})
			actual, _ := grpcServers.LoadOrStore(host, s)
			return actual.(*grpc.Server)
		}
		return &kongemu.EchoBackend{Namespace: pod.Namespace, Pod: pod.Name, HTTPPort: strconv.Itoa(port)}
	}, BackendTLS: echoServerTLS, ResolveStream: conformanceStreamBackends(admin)})
	_, first, tlsAddr, more := conformanceProxyListen()
	ps, err := p.Start(kongemu.ProxyListen{Addr: first, TLSAddr: tlsAddr, MoreAddrs: more})
	require.NoError(t, err)
	t.Cleanup(func() { ps.Close() })
	startConformanceStreams(t, ps.Proxy)
	return &conformanceGateway{server: ps}
}

// dial connects to the proxy whatever Gateway address is asked, at the proxy listen the
// publish Service gives its port (proxyTarget).
func (g *conformanceGateway) dial(ctx context.Context, network, address string) (net.Conn, error) {
	_, port, _ := net.SplitHostPort(address)
	p, _ := strconv.Atoi(port)
	var d net.Dialer
	return d.DialContext(ctx, network, proxyTarget(int32(p)))
}

// grpcEcho answers as the suite's gRPC echo server (echo-basic's grpc mode): the method, the
// request's metadata and :authority, and the Pod it runs in.
type grpcEcho struct {
	echopb.UnimplementedGrpcEchoServer
	pod fakePod
}

func (g *grpcEcho) answer(ctx context.Context, method string) (*echopb.EchoResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	var headers []*echopb.Header
	authority := ""
	for k, vs := range md {
		for _, v := range vs {
			if k == ":authority" {
				authority = v
			}
			headers = append(headers, &echopb.Header{Key: k, Value: v})
		}
	}
	return &echopb.EchoResponse{Assertions: &echopb.Assertions{
		FullyQualifiedMethod: "/gateway_api_conformance.echo_basic.grpcecho.GrpcEcho/" + method,
		Headers:              headers, Authority: authority,
		Context: &echopb.Context{Namespace: g.pod.Namespace, Pod: g.pod.Name},
	}}, nil
}

func (g *grpcEcho) Echo(ctx context.Context, _ *echopb.EchoRequest) (*echopb.EchoResponse, error) {
	return g.answer(ctx, "Echo")
}

func (g *grpcEcho) EchoTwo(ctx context.Context, _ *echopb.EchoRequest) (*echopb.EchoResponse, error) {
	return g.answer(ctx, "EchoTwo")
}

// conformanceGRPCClient is the suite's gRPC client with its dialer sending every Gateway
// address to the proxy; a connection per request, with the request's authority.
type conformanceGRPCClient struct {
	dial func(ctx context.Context, network, address string) (net.Conn, error)
}

func (c *conformanceGRPCClient) SendRPC(t *testing.T, address string, expected grpcconf.ExpectedResponse, timeout time.Duration) (*grpcconf.Response, error) {
	t.Helper()
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) { return c.dial(ctx, "tcp", addr) })}
	if rm := expected.RequestMetadata; rm != nil && rm.Authority != "" {
		opts = append(opts, grpc.WithAuthority(rm.Authority))
	}
	conn, err := grpc.NewClient("passthrough:///"+address, opts...)
	if err != nil {
		return &grpcconf.Response{}, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if rm := expected.RequestMetadata; rm != nil && len(rm.Metadata) > 0 {
		ctx = metadata.NewOutgoingContext(ctx, metadata.New(rm.Metadata))
	}
	resp := &grpcconf.Response{Headers: &metadata.MD{}, Trailers: &metadata.MD{}}
	stub := echopb.NewGrpcEchoClient(conn)
	call := []grpc.CallOption{grpc.Header(resp.Headers), grpc.Trailer(resp.Trailers)}
	switch {
	case expected.EchoRequest != nil:
		resp.Response, err = stub.Echo(ctx, expected.EchoRequest, call...)
	case expected.EchoTwoRequest != nil:
		resp.Response, err = stub.EchoTwo(ctx, expected.EchoTwoRequest, call...)
	case expected.EchoThreeRequest != nil:
		resp.Response, err = stub.EchoThree(ctx, expected.EchoThreeRequest, call...)
	default:
		return resp, fmt.Errorf("no request specified")
	}
	resp.Code = status.Code(err)
	return resp, nil
}

func (c *conformanceGRPCClient) Close() {}

// triedFeatures is nil (the suite infers the class's features), or the class's features and
// those of KONDUCTOR_CONFORMANCE_FEATURES (comma-separated) to try one before declaring it.
func triedFeatures(declared []gatewayv1.SupportedFeature) []features.FeatureName {
	tried := os.Getenv("KONDUCTOR_CONFORMANCE_FEATURES")
	if tried == "" {
		return nil
	}
	var out []features.FeatureName
	for _, f := range declared {
		out = append(out, features.FeatureName(f.Name))
	}
	for _, f := range strings.Split(tried, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, features.FeatureName(f))
		}
	}
	return out
}

// conformanceVersion is the report's implementation version: KONDUCTOR_CONFORMANCE_VERSION
// (make conformance gives the commit), "dev" without it.
func conformanceVersion() string {
	if v := os.Getenv("KONDUCTOR_CONFORMANCE_VERSION"); v != "" {
		return v
	}
	return "dev"
}
