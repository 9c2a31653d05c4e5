package translator

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/manifest"
	"github.com/konductor/konductor/internal/store"
)

// Every unresolved backendRef reaches the route's attachment with its ResolvedRefs reason,
// in spec order, for the route's status: also those of rules translation left out and of
// routes no parent accepted.
func TestBackendRefProblemsReachTheAttachment(t *testing.T) {
	objs, err := manifest.Load("testdata/httproute-invalid/in.yaml")
	require.NoError(t, err)
	st, err := store.NewForObjects(objs, store.Options{})
	require.NoError(t, err)
	snap, err := st.Snapshot(context.Background())
	require.NoError(t, err)
	res := Build(snap, Options{})

	var backends *gatewayv1.HTTPRoute
	for _, hr := range snap.HTTPRoutes {
		if hr.Namespace == "default" && hr.Name == "backends" {
			backends = hr
		}
	}
	require.NotNil(t, backends)
	ra := res.Gateway.Route(gatewayapi.KindHTTPRoute, backends)
	require.NotNil(t, ra)
	var reasons []gatewayv1.RouteConditionReason
	for _, p := range ra.RefProblems {
		reasons = append(reasons, p.Reason)
	}
	require.Equal(t, []gatewayv1.RouteConditionReason{
		gatewayv1.RouteReasonBackendNotFound, gatewayv1.RouteReasonRefNotPermitted,
		gatewayv1.RouteReasonInvalidKind, gatewayv1.RouteReasonBackendNotFound,
	}, reasons)
	require.Contains(t, ra.RefProblems[0].Message, "Service default/missing not found")

	refProblems := func(name string) []string {
		for _, hr := range snap.HTTPRoutes {
			if hr.Name == name {
				var out []string
				for _, p := range res.Gateway.Route(gatewayapi.KindHTTPRoute, hr).RefProblems {
					out = append(out, string(p.Reason)+" "+p.Message)
				}
				return out
			}
		}
		t.Fatalf("no route %s", name)
		return nil
	}
	require.Equal(t, []string{"BackendNotFound spec.rules[1].backendRefs[0].port: can't find port for backend kubernetes service default/echo: no suitable port found"},
		refProblems("bad-rules"), "the rule left out for its regex names a port the Service lacks")
	require.Empty(t, refProblems("query"), "a route whose backends resolve has none")
	require.Equal(t, []string{"BackendNotFound spec.rules[0].backendRefs[0]: Service team/echo not found"}, refProblems("other-namespace"),
		"a route no parent accepted still has its references checked")
}
