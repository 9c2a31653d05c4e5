package translator

import (
	"fmt"
	"testing"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/store"
)

// BenchmarkIncrementalOneHTTPRouteChanged measures a round after one HTTPRoute's host name
// changed (issue #13: the round a Gateway's attachedRoutes status write waits for at the
// sync gate): Incremental.Build of the new snapshot and the body of POST /config rendered by
// a kongstate.Renderer, against a full Build and State.DeclarativeConfig ("full", what every
// HTTPRoute change cost before Incremental spliced them). Clusters are routeCluster's: each
// route with a Service of its own ("own"), or all naming one Service ("shared", the cluster
// of `make bench-attached`).
func BenchmarkIncrementalOneHTTPRouteChanged(b *testing.B) {
	for _, n := range []int{1000, 3000} {
		for _, shared := range []bool{false, true} {
			base := routeCluster(n, shared)
			services := map[bool]string{false: "own", true: "shared"}[shared]
			for _, mode := range []string{"incremental", "full"} {
				b.Run(fmt.Sprintf("routes=%d/services=%s/%s", n, services, mode), func(b *testing.B) {
					benchIncrementalRounds(b, mode, base, func(snap *store.Snapshot, i int) *store.Snapshot {
						next := *snap
						next.HTTPRoutes = append([]*gatewayv1.HTTPRoute(nil), snap.HTTPRoutes...)
						if i < 0 {
							return &next
						}
						k := i % n
						hr := next.HTTPRoutes[k].DeepCopy()
						hr.ResourceVersion = fmt.Sprint(i + 2)
						hr.Generation++
						hr.Spec.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(fmt.Sprintf("changed-%d.example.com", i))}
						next.HTTPRoutes[k] = hr
						return &next
					}, func(res Result) {
						if len(res.State.Services) < n {
							b.Fatalf("unexpected result: %d services", len(res.State.Services))
						}
					})
				})
			}
		}
	}
}
