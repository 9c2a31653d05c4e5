package integration

import (
	"context"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	gatewayv1alpha3 "sigs.k8s.io/gateway-api/apis/v1alpha3"
	gatewayxv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"
	"sigs.k8s.io/gateway-api/conformance"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/tests"
	conformanceconfig "sigs.k8s.io/gateway-api/conformance/utils/config"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/gateway-api/pkg/features"

	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/store"
)

// conformanceNamespaces are the namespaces the suite's base manifests and the tests that run
// here use; the controller watches only these, so that other tests' leftovers are not its
// business.
var conformanceNamespaces = []string{
	"gateway-conformance-infra", "gateway-conformance-app-backend", "gateway-conformance-web-backend",
	"gateway-api-routes-allowed-ns", "gateway-api-routes-not-allowed-ns", "not-the-namespace-youre-looking-for",
}

// Reasons a conformance test of the profiles is not run here.
const (
	needsTraffic = "sends requests through the gateway: the integration tests run the Kong emulator, which proxies nothing"
)

// conformanceSkipped are the tests of the GATEWAY-HTTP and GATEWAY-GRPC profiles' supported
// features that are not run, by name, with why. Every other test of those profiles runs; a
// test whose features are not supported is reported as such by the suite itself.
var conformanceSkipped = map[string]string{
	"GRPCExactMethodMatching":                           needsTraffic,
	"GRPCRouteHeaderMatching":                           needsTraffic,
	"GRPCRouteListenerHostnameMatching":                 needsTraffic,
	"GRPCRouteWeight":                                   needsTraffic,
	"HTTPRouteCrossNamespace":                           needsTraffic,
	"HTTPRouteExactPathMatching":                        needsTraffic,
	"HTTPRouteHTTPSListener":                            needsTraffic,
	"HTTPRouteHeaderMatching":                           needsTraffic,
	"HTTPRouteHostnameIntersection":                     needsTraffic,
	"HTTPRouteInvalidBackendRefUnknownKind":             needsTraffic,
	"HTTPRouteInvalidCrossNamespaceBackendRef":          needsTraffic,
	"HTTPRouteInvalidNonExistentBackendRef":             needsTraffic,
	"HTTPRouteInvalidReferenceGrant":                    needsTraffic,
	"HTTPRouteListenerHostnameMatching":                 needsTraffic,
	"HTTPRouteMatchingAcrossRoutes":                     needsTraffic,
	"HTTPRouteMatching":                                 needsTraffic,
	"HTTPRouteMultipleGateways":                         needsTraffic,
	"HTTPRouteNoBackendRefs":                            needsTraffic,
	"HTTPRoutePartiallyInvalidViaInvalidReferenceGrant": needsTraffic,
	"HTTPRoutePathMatchOrder":                           needsTraffic,
	"HTTPRouteRedirectHostAndStatus":                    needsTraffic,
	"HTTPRouteRequestHeaderModifier":                    needsTraffic,
	"HTTPRouteReferenceGrant":                           needsTraffic,
	"HTTPRouteServiceTypes":                             needsTraffic,
	"HTTPRouteSimpleSameNamespace":                      needsTraffic,
	"HTTPRouteWeight":                                   needsTraffic,
}

// conformanceScheme is the scheme of the suite's client: the controller's, and the other
// kinds the suite's manifests and checks use, CRDs included (it reads the installed Gateway
// API version from them).
func conformanceScheme() *runtime.Scheme {
	s := store.NewScheme()
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(gatewayv1alpha2.Install(s))
	utilruntime.Must(gatewayv1alpha3.Install(s))
	utilruntime.Must(gatewayxv1alpha1.Install(s))
	return s
}

// The Gateway API conformance suite (sigs.k8s.io/gateway-api/conformance, GATEWAY-HTTP and
// GATEWAY-GRPC profiles, core features) against konductor on the real API server with the
// Kong emulator as its gateway: the tests that check status only. Tests that need traffic
// are skipped by name (conformanceSkipped); Pods and Deployments of the suite's echo
// backends are made ready through the API (backendsReady), as there is no kubelet.
func TestGatewayAPIConformance(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	const controller = "konductor.test/conformance"
	className := "konductor-conformance"
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: className},
		Spec: gatewayv1.GatewayClassSpec{ControllerName: controller}}
	require.NoError(t, admin.Create(ctx, class))
	t.Cleanup(func() { _ = admin.Delete(context.Background(), class) })

	kong := startEmulator(t, kongemu.DBLess)
	r := startReplica(t, replicaSpec{name: "conformance", namespace: conformanceNamespaces[0], gateways: []string{kong.URL}, args: []string{
		"--leader-elect=false", "--watch-namespace", strings.Join(conformanceNamespaces, ","),
		"--gateway-api-controller-name", controller, "--publish-status-address", "192.0.2.20",
	}})
	r.waitFirstSync(t, time.Minute)
	readyDone := make(chan struct{})
	go func() { defer close(readyDone); backendsReady(ctx, admin, conformanceNamespaces, 200*time.Millisecond) }()
	t.Cleanup(func() { cancel(); <-readyDone })

	restConfig := rest.CopyConfig(adminConfig) // the suite sets its user agent per test
	clientOptions := client.Options{Scheme: conformanceScheme()}
	c, err := client.New(restConfig, clientOptions)
	require.NoError(t, err)
	cs, err := clientset.NewForConfig(restConfig)
	require.NoError(t, err)
	skipped := make([]string, 0, len(conformanceSkipped))
	for name := range conformanceSkipped {
		skipped = append(skipped, name)
	}
	timeouts := conformanceconfig.DefaultTimeoutConfig()
	opts := suite.ConformanceOptions{
		ConfigurableOptions: suite.ConfigurableOptions{
			GatewayClassName:     className,
			CleanupBaseResources: false, // no namespace controller: a deleted namespace stays Terminating
			CleanupTestResources: true,
			ConformanceProfiles:  []suite.ConformanceProfileName{suite.GatewayHTTPConformanceProfileName, suite.GatewayGRPCConformanceProfileName},
			// The profiles' core features; set here rather than read from the class's
			// status.supportedFeatures, which konductor does not write (KIC does not either).
			SupportedFeatures: []features.FeatureName{features.SupportGateway, features.SupportHTTPRoute, features.SupportReferenceGrant, features.SupportGRPCRoute},
			SkipTests:         skipped,
			TimeoutConfig:     timeouts,
			Implementation:    confv1.Implementation{Organization: "konductor", Project: "konductor", URL: "https://github.com/konductor/konductor", Version: "dev", Contact: []string{"konductor"}},
		},
		Client:        c,
		ClientOptions: clientOptions,
		Clientset:     cs,
		RestConfig:    restConfig,
		ManifestFS:    []fs.FS{&conformance.Manifests},
	}
	cSuite, err := suite.NewConformanceTestSuite(opts)
	require.NoError(t, err)
	// The report, once the parallel tests are done too (cleanups run last first: this one
	// after the one Run registers, which ends the run).
	t.Cleanup(func() {
		report, err := cSuite.Report()
		require.NoError(t, err)
		t.Log("conformance: " + conformanceSummary(report))
	})
	cSuite.Setup(t, tests.ConformanceTests)
	require.NoError(t, cSuite.Run(t, tests.ConformanceTests))
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
