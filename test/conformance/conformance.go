// Package conformance holds what the two runs of the Gateway API conformance suite share:
// the one against the Kong emulator in `make test` (test/integration,
// TestGatewayAPIConformance) and the one against Kong in a kind cluster
// (TestConformanceOnCluster, run by .github/workflows/conformance-kind.yaml).
package conformance

import (
	"os"
	"slices"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	gatewayv1alpha3 "sigs.k8s.io/gateway-api/apis/v1alpha3"
	gatewayxv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/konductor/konductor/internal/store"
)

// Skipped are the tests of the declared features that are not run, by name, with why. Every
// other test of the profiles run runs; a test of a feature the
// class does not declare is reported "not supported" by the suite itself.
var Skipped = map[string]string{
	// Every Gateway of a class is served by one Kong (KIC's model): a request reaches the same
	// router whichever Gateway's address it was sent to, so two Gateways whose listeners share
	// a port and hostname cannot route the same request differently. Kong Operator, with a
	// data plane per Gateway, can; docs/gateway-api.md, "Conformance".
	"HTTPRouteMultipleGateways": "one Kong serves every Gateway of the class: Gateways with the same port and hostname share its routes",
	// The same for TLS: its four Gateways have a TLS listener each on port 443, and a
	// connection whose SNI one Gateway's routes refuse (non.matching.com) is taken by another
	// Gateway's route for "*.com" on the same Kong port. Its HTTPS requests also go through
	// the suite's HTTP client, which the harness sends to Kong's HTTPS proxy listener (port
	// 443 of the HTTP profile), not to the stream listener of its TLS listeners.
	"TLSRouteHostnameIntersection": "one Kong serves every Gateway of the class: a TLSRoute of one Gateway takes SNIs another Gateway on the same port refuses",
	// Its requests expect the backend to see the client's Host (abc.example.com) over a
	// connection whose SNI is another name, the policy's hostname (other.example.com). Kong
	// sends one name as both: its proxy location has proxy_ssl_name $upstream_host and
	// proxy_set_header Host $upstream_host (kong/templates/nginx_kong.lua), and the PDK's
	// set_header("host") "also sets the SNI"; Kong OSS has no per-service SNI. konductor sends
	// the policy's hostname (the SNI and verified name the spec requires) as both. Its status
	// cases (the oldest policy accepted, the other Conflicted, a sectionName policy beside a
	// whole-Service one both accepted) and its request whose Host is the policy's hostname pass
	// when it is run (KONDUCTOR_CONFORMANCE_ONLY=BackendTLSPolicyConflictResolution with this
	// entry removed); docs/gateway-api.md, "Conformance".
	"BackendTLSPolicyConflictResolution": "Kong sends one name as SNI and Host ($upstream_host): the test expects the client's Host over the policy hostname's SNI",
}

// Serial are tests of the declared features run alone, after the serial ones and before the
// parallel ones, instead of beside the suite's other parallel tests, with why: their Gateways
// would take requests meant for another test's Gateway. Every Gateway of a class is served by
// one Kong, whose port is every Gateway's (HTTPRouteMultipleGateways in Skipped); the
// assertions are the suite's, unchanged.
var Serial = map[string]string{
	// Its Gateway has a "*.example.com" listener on port 80. Listener isolation gives a
	// request to the most specific listener of the port, across every Gateway that one Kong
	// serves (translator's listenerIsolation), so while it runs the abc.example.com routes of
	// the BackendTLSPolicy tests on the hostname-less listener of another Gateway answer 404.
	"GatewayHTTPListenerIsolation": "its *.example.com listener on Kong's port 80 takes the abc.example.com requests of the parallel BackendTLSPolicy tests",
}

// Scheduled is tests with the tests of Serial made serial (copies; tests is not modified).
func Scheduled(tests []suite.ConformanceTest) []suite.ConformanceTest {
	out := slices.Clone(tests)
	for i := range out {
		if _, ok := Serial[out[i].ShortName]; ok {
			out[i].Parallel = false
		}
	}
	return out
}

// StaticAddresses are the suite's pools for GatewayStaticAddresses: usable, the addresses
// Kong's proxy is published at (a Gateway may request them); unusable, one it is not
// (192.0.2.21, of TEST-NET-1, which no publish Service here has).
func StaticAddresses(published ...string) (usable, unusable []gatewayv1.GatewaySpecAddress) {
	ip := gatewayv1.IPAddressType
	for _, a := range published {
		usable = append(usable, gatewayv1.GatewaySpecAddress{Type: &ip, Value: a})
	}
	return usable, []gatewayv1.GatewaySpecAddress{{Type: &ip, Value: "192.0.2.21"}}
}

// SkippedNames are Skipped's names, sorted.
func SkippedNames() []string {
	out := make([]string, 0, len(Skipped))
	for name := range Skipped {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// Scheme is the scheme of the suite's client: the controller's, and the other kinds the
// suite's manifests and checks use, CRDs included (it reads the installed Gateway API version
// from them).
func Scheme() *runtime.Scheme {
	s := store.NewScheme()
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(gatewayv1alpha2.Install(s))
	utilruntime.Must(gatewayv1alpha3.Install(s))
	utilruntime.Must(gatewayxv1alpha1.Install(s))
	return s
}

// WriteReport writes the suite's report as YAML (the suite's --report-output format) where
// KONDUCTOR_CONFORMANCE_REPORT says; without it, nowhere.
func WriteReport(report *confv1.ConformanceReport) error {
	path := os.Getenv("KONDUCTOR_CONFORMANCE_REPORT")
	if path == "" {
		return nil
	}
	b, err := sigsyaml.Marshal(report)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
