package gatewayapi

import (
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/sets"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/pkg/features"
)

func names(fs []gatewayv1.SupportedFeature) []string {
	out := make([]string, 0, len(fs))
	for _, f := range fs {
		out = append(out, string(f.Name))
	}
	return out
}

// The class's features are sorted (the API asks it), each is a feature the suite knows, the
// profiles' core ones are always there, and the expressions router adds the features that
// need it and removes none.
func TestSupportedFeatures(t *testing.T) {
	known := features.SetsToNamesSet(features.AllFeatures)
	traditional := names(SupportedFeatures(Router{}))
	expressions := names(SupportedFeatures(Router{Expressions: true}))
	for _, list := range [][]string{traditional, expressions} {
		require.True(t, sort.StringsAreSorted(list), "%v", list)
		for _, n := range list {
			require.True(t, known.Has(features.FeatureName(n)), "%s is not a Gateway API feature", n)
		}
		for _, core := range []features.FeatureName{features.SupportGateway, features.SupportHTTPRoute, features.SupportReferenceGrant, features.SupportGRPCRoute} {
			require.Contains(t, list, string(core))
		}
	}
	require.True(t, sets.New(expressions...).IsSuperset(sets.New(traditional...)))
	for _, f := range supported {
		if f.expressionsOnly {
			require.NotContains(t, traditional, string(f.name))
			require.Contains(t, expressions, string(f.name))
		}
	}
}

// The stream route kinds' features and BackendTLSPolicy are declared only with KIC's
// GatewayAlpha gate, without which konductor does not read those kinds; they are the same
// under both routers.
func TestSupportedFeaturesNeedGatewayAlphaForStreams(t *testing.T) {
	streams := []string{string(features.SupportTLSRoute), string(features.SupportTLSRouteModeTerminate),
		string(features.SupportTLSRouteModeMixed), string(features.SupportTCPRoute), string(features.SupportUDPRoute),
		string(features.SupportBackendTLSPolicy)}
	for _, expressions := range []bool{false, true} {
		without := names(SupportedFeatures(Router{Expressions: expressions}))
		with := names(SupportedFeatures(Router{Expressions: expressions, GatewayAlpha: true}))
		for _, n := range streams {
			require.NotContains(t, without, n)
			require.Contains(t, with, n)
		}
		require.ElementsMatch(t, append(without, streams...), with, "the gate adds the stream features and BackendTLSPolicy only")
	}
}
