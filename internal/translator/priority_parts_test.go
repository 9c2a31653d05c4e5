package translator

import (
	"testing"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"
	netv1 "k8s.io/api/networking/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Each part ExpressionPriorityPart names is the part the priority functions set: two matches
// that differ in one thing only are ordered by the part of that name.
func TestExpressionPriorityPart(t *testing.T) {
	ingress := func(hosts []string, paths []sourcePath, headers map[string][]string) uint64 {
		r := &routeEntry{FRoute: &file.FRoute{Route: kong.Route{Hosts: kong.StringSlice(hosts...), Headers: headers}}, sources: paths}
		_, p := routeExpression(r)
		return p
	}
	prefix := func(p string) []sourcePath { return []sourcePath{{pathType: netv1.PathTypePrefix, path: p}} }
	regex := []sourcePath{{pathType: netv1.PathTypeImplementationSpecific, path: "/~/a+", regexPrefix: "/~"}}
	for _, c := range []struct {
		a, b uint64
		want string
	}{
		{ingress([]string{"a.example.com"}, prefix("/a"), nil), ingress([]string{"*.example.com"}, prefix("/a"), nil), "plain hosts only"},
		{ingress([]string{"a.example.com"}, prefix("/abc"), nil), ingress([]string{"a.example.com"}, prefix("/a"), nil), "path length"},
		{ingress([]string{"a"}, prefix("/a"), map[string][]string{"x": {"1"}, "y": {"1"}}), ingress([]string{"a"}, prefix("/a"), map[string][]string{"x": {"1"}}), "header count"},
		{ingress([]string{"a"}, prefix("/a"), nil), ingress(nil, prefix("/a"), nil), "fields matched on"},
		{ingress([]string{"a"}, regex, nil), ingress([]string{"a"}, []sourcePath{{pathType: netv1.PathTypeImplementationSpecific, path: "/abcdefgh"}}, nil),
			"regex paths (KIC counts Prefix and Exact paths as regexes)"},
	} {
		require.Equal(t, c.want, ExpressionPriorityPart("Ingress", c.a, c.b))
	}

	exact, pfx := gatewayv1.PathMatchExact, gatewayv1.PathMatchPathPrefix
	get := gatewayv1.HTTPMethodGet
	http := func(host string, m gatewayv1.HTTPRouteMatch) uint64 {
		return httpMatchPriority(&httpSplitMatch{hostname: host, m: m})
	}
	path := func(t *gatewayv1.PathMatchType, v string) *gatewayv1.HTTPPathMatch {
		return &gatewayv1.HTTPPathMatch{Type: t, Value: &v}
	}
	for _, c := range []struct {
		a, b uint64
		want string
	}{
		{http("a.example.com", gatewayv1.HTTPRouteMatch{}), http("*.example.com", gatewayv1.HTTPRouteMatch{}), "precise hostname"},
		{http("aa.example.com", gatewayv1.HTTPRouteMatch{}), http("a.example.com", gatewayv1.HTTPRouteMatch{}), "hostname length"},
		{http("a", gatewayv1.HTTPRouteMatch{Path: path(&exact, "/a")}), http("a", gatewayv1.HTTPRouteMatch{Path: path(&pfx, "/a")}), "Exact path"},
		{http("a", gatewayv1.HTTPRouteMatch{Path: path(&pfx, "/abc")}), http("a", gatewayv1.HTTPRouteMatch{Path: path(&pfx, "/a")}), "path length"},
		{http("a", gatewayv1.HTTPRouteMatch{Method: &get}), http("a", gatewayv1.HTTPRouteMatch{}), "method"},
		{http("a", gatewayv1.HTTPRouteMatch{Headers: []gatewayv1.HTTPHeaderMatch{{Name: "x", Value: "1"}}}), http("a", gatewayv1.HTTPRouteMatch{}), "header count"},
		{http("a", gatewayv1.HTTPRouteMatch{QueryParams: []gatewayv1.HTTPQueryParamMatch{{Name: "x", Value: "1"}}}), http("a", gatewayv1.HTTPRouteMatch{}), "query parameter count"},
		{http("a", gatewayv1.HTTPRouteMatch{}) + 5, http("a", gatewayv1.HTTPRouteMatch{}) + 4, "creation order (older first, then namespace, name, rule and match)"},
	} {
		require.Equal(t, c.want, ExpressionPriorityPart("HTTPRoute", c.a, c.b))
	}
	grpc := func(host string, m gatewayv1.GRPCRouteMatch) uint64 {
		return grpcMatchPriority(&grpcSplitMatch{hostname: host, m: m})
	}
	svc := "echo.Echo"
	require.Equal(t, "precise hostname", ExpressionPriorityPart("GRPCRoute", grpc("a.b", gatewayv1.GRPCRouteMatch{}), grpc("*.b", gatewayv1.GRPCRouteMatch{})))
	require.Equal(t, "service name length", ExpressionPriorityPart("GRPCRoute",
		grpc("a", gatewayv1.GRPCRouteMatch{Method: &gatewayv1.GRPCMethodMatch{Service: &svc}}), grpc("a", gatewayv1.GRPCRouteMatch{})))
	require.Equal(t, "header count", ExpressionPriorityPart("GRPCRoute",
		grpc("a", gatewayv1.GRPCRouteMatch{Headers: []gatewayv1.GRPCHeaderMatch{{Name: "x", Value: "1"}}}), grpc("a", gatewayv1.GRPCRouteMatch{})))
	require.Equal(t, "", ExpressionPriorityPart("HTTPRoute", 7, 7))
	require.Equal(t, "", ExpressionPriorityPart("TCPIngress", 7, 8))
}
