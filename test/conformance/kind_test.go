package conformance

import (
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/gateway-api/conformance"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/tests"
	conformanceconfig "sigs.k8s.io/gateway-api/conformance/utils/config"
	"sigs.k8s.io/gateway-api/conformance/utils/roundtripper"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"

	clientset "k8s.io/client-go/kubernetes"
)

// TestConformanceOnCluster runs the suite against a real cluster: Kong and konductor installed
// by .github/workflows/conformance-kind.yaml in kind, the suite's requests sent to the
// Gateways' addresses as any client sends them; it is the check that the emulator's answers
// in `make test` are Kong's. It runs when KONDUCTOR_CONFORMANCE_CLASS names the GatewayClass that
// konductor serves in the cluster of the current kubeconfig (KUBECONFIG); the features are
// read from the class's status.supportedFeatures, as konductor declares them.
// KONDUCTOR_CONFORMANCE_REPORT is where the ConformanceReport is written.
func TestConformanceOnCluster(t *testing.T) {
	className := os.Getenv("KONDUCTOR_CONFORMANCE_CLASS")
	if className == "" {
		t.Skip("KONDUCTOR_CONFORMANCE_CLASS is not set: no cluster to run the suite against (the workflow conformance-kind sets it)")
	}
	restConfig, err := config.GetConfig()
	require.NoError(t, err)
	clientOptions := client.Options{Scheme: Scheme()}
	c, err := client.New(restConfig, clientOptions)
	require.NoError(t, err)
	cs, err := clientset.NewForConfig(restConfig)
	require.NoError(t, err)
	timeouts := conformanceconfig.DefaultTimeoutConfig()
	version := os.Getenv("KONDUCTOR_CONFORMANCE_VERSION")
	if version == "" {
		version = "dev"
	}
	// GatewayStaticAddresses: the proxy Service's load-balancer addresses (the workflow
	// reads them), comma-separated.
	var published []string
	for _, a := range strings.Split(os.Getenv("KONDUCTOR_CONFORMANCE_PUBLISHED_ADDRESSES"), ",") {
		if a = strings.TrimSpace(a); a != "" {
			published = append(published, a)
		}
	}
	usable, unusable := StaticAddresses(published...)
	cSuite, err := suite.NewConformanceTestSuite(suite.ConformanceOptions{
		ConfigurableOptions: suite.ConfigurableOptions{
			GatewayClassName:     className,
			CleanupBaseResources: true,
			CleanupTestResources: true,
			// Not the stream profiles that `make test` runs: the workflow's Kong has no
			// stream_listen and konductor no GatewayAlpha gate (so it declares no stream
			// feature), and one Kong address cannot serve the HTTP profile's HTTPS listeners
			// and the TLS profile's TLS listeners both on port 443 (docs/gateway-api.md).
			ConformanceProfiles:      []suite.ConformanceProfileName{suite.GatewayHTTPConformanceProfileName, suite.GatewayGRPCConformanceProfileName},
			TimeoutConfig:            timeouts,
			Implementation:           confv1.Implementation{Organization: "konductor", Project: "konductor", URL: "https://github.com/konductor/konductor", Version: version, Contact: []string{"konductor"}},
			Mode:                     "kind-" + os.Getenv("KONDUCTOR_CONFORMANCE_ROUTER"),
			SkipTests:                SkippedNames(),
			UsableNetworkAddresses:   usable,
			UnusableNetworkAddresses: unusable,
		},
		RoundTripper:  &roundtripper.DefaultRoundTripper{TimeoutConfig: timeouts},
		Client:        c,
		ClientOptions: clientOptions,
		Clientset:     cs,
		RestConfig:    restConfig,
		ManifestFS:    []fs.FS{&conformance.Manifests},
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		report, err := cSuite.Report()
		require.NoError(t, err)
		require.NoError(t, WriteReport(report))
	})
	run := Scheduled(tests.ConformanceTests)
	cSuite.Setup(t, run)
	require.NoError(t, cSuite.Run(t, run))
}
