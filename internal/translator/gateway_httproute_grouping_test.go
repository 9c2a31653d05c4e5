package translator

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// kongServiceView is what TestHTTPRouteKongServicesAsKIC checks of a Kong service.
type kongServiceView struct {
	routes  []string // names, sorted (the rendering does not order them by name)
	timeout float64  // connect_timeout (read and write are set with it)
	port    float64  // the port of the last Service resolved of the first rule's backendRefs
}

// KIC 3.5 gives an HTTPRoute's rules Kong services the same way on both routers, without
// combined services (subtranslator/httproute.go groupRulesFromHTTPRoutesByKongServiceName,
// getHTTPBackendRefsKey = getSortedItemsString of the backendRefs, service
// httproute.<ns>.<name>.<lowest rule index of the group>; TranslateHTTPRoutesToKongstateServices
// sorts a service's rules by getRuleKey before it reads the first one's backendRefs and
// applies every rule's timeout). Under the expressions router the routes are the split ones
// (kongExpressionRouteFromHTTPRouteMatchWithPriority), in their rule's grouped service.
func TestHTTPRouteKongServicesAsKIC(t *testing.T) {
	for _, tc := range []struct {
		dir  string
		want map[string]kongServiceView // the services of the case's HTTPRoute, by name
		of   string                     // their names' prefix
	}{
		{
			dir: "httproute-backendrefs-grouping",
			of:  "httproute.default.grouping.",
			want: map[string]kongServiceView{
				"httproute.default.grouping.0": {[]string{"httproute.default.grouping.0.0"}, 60000, 8080},
				"httproute.default.grouping.2": {[]string{"httproute.default.grouping.10.0"}, 5000, 80},
				"httproute.default.grouping.3": {[]string{"httproute.default.grouping.3.0"}, 60000, 8080},
				"httproute.default.grouping.4": {[]string{"httproute.default.grouping.4.0"}, 60000, 8080},
				"httproute.default.grouping.5": {[]string{"httproute.default.grouping.5.0"}, 60000, 80},
			},
		},
		{
			dir: "httproute-backendrefs-grouping-expressions",
			of:  "httproute.default.grouping.",
			want: map[string]kongServiceView{
				"httproute.default.grouping.0": {splitRouteNames("httproute.default.grouping", 0, 1), 60000, 8080},
				"httproute.default.grouping.2": {splitRouteNames("httproute.default.grouping", 10, 2), 5000, 80},
				"httproute.default.grouping.3": {splitRouteNames("httproute.default.grouping", 3), 60000, 8080},
				"httproute.default.grouping.4": {splitRouteNames("httproute.default.grouping", 4), 60000, 8080},
				"httproute.default.grouping.5": {splitRouteNames("httproute.default.grouping", 5, 6, 7, 8, 9), 60000, 80},
			},
		},
		{
			// The older case: rules 1 and 2 of httproute-testing share backendRefs, the
			// hostnames of "hosts" share its only rule's service.
			dir: "httproute-expressions",
			of:  "httproute.default.",
			want: map[string]kongServiceView{
				"httproute.default.httproute-testing.0": {[]string{"httproute.default.httproute-testing._.0.0"}, 60000, 8080},
				"httproute.default.httproute-testing.1": {[]string{"httproute.default.httproute-testing._.1.0", "httproute.default.httproute-testing._.2.0"}, 60000, 80},
				"httproute.default.httproute-testing.3": {[]string{"httproute.default.httproute-testing._.3.0"}, 60000, 8080},
				"httproute.default.hosts.0":             {[]string{"httproute.default.hosts._.example.org.0.0", "httproute.default.hosts.example.com.0.0"}, 60000, 8080},
				"httproute.default.kinds.0":             {[]string{"httproute.default.kinds.api.example.com.0.0", "httproute.default.kinds.api.example.com.0.1"}, 5000, 80},
				"httproute.default.ties-a.0":            {[]string{"httproute.default.ties-a._.0.0"}, 60000, 80},
				"httproute.default.ties-b.0":            {[]string{"httproute.default.ties-b._.0.0"}, 60000, 80},
				// Rule 1's only split is left out (an invalid regex): no service.
				"httproute.default.bad-regex.0": {[]string{"httproute.default.bad-regex._.0.0"}, 60000, 80},
			},
		},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			got := map[string]kongServiceView{}
			for _, s := range goldenConfig(t, tc.dir)["services"].([]any) {
				svc := s.(map[string]any)
				name := svc["name"].(string)
				if !strings.HasPrefix(name, tc.of) {
					continue
				}
				v := kongServiceView{timeout: svc["connect_timeout"].(float64), port: svc["port"].(float64)}
				routes, _ := svc["routes"].([]any)
				for _, r := range routes {
					v.routes = append(v.routes, r.(map[string]any)["name"].(string))
				}
				slices.Sort(v.routes)
				got[name] = v
			}
			require.Equal(t, tc.want, got)
		})
	}
}

// splitRouteNames are the expression routes of the rules (one match each) of the HTTPRoute
// prefix of httproute-backendrefs-grouping-expressions, one per hostname, sorted.
func splitRouteNames(prefix string, rules ...int) []string {
	var out []string
	for _, host := range []string{"_.example.org", "example.com"} {
		for _, r := range rules {
			out = append(out, prefix+"."+host+"."+strconv.Itoa(r)+".0")
		}
	}
	slices.Sort(out)
	return out
}
