package translator

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"
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

// BenchmarkIncrementalOneGatewayRouteChanged is BenchmarkIncrementalOneHTTPRouteChanged for
// the other route kinds, on mixedRouteCluster(3000, 300) (with GatewayAlpha): one GRPCRoute's
// host name, one TCPRoute's backend port or one TLSRoute's host name changed per round, or a
// GRPCRoute created and deleted in turn.
func BenchmarkIncrementalOneGatewayRouteChanged(b *testing.B) {
	base := mixedRouteCluster(3000, 300)
	opts := Options{GatewayAlpha: true}
	edits := []struct {
		kind string
		edit func(next *store.Snapshot, i int)
	}{
		{"GRPCRoute", func(next *store.Snapshot, i int) {
			k := i % len(next.GRPCRoutes)
			r := next.GRPCRoutes[k].DeepCopy()
			r.ResourceVersion, r.Generation = fmt.Sprint(i+2), r.Generation+1
			r.Spec.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(fmt.Sprintf("changed-%d.example.com", i))}
			next.GRPCRoutes[k] = r
		}},
		{"GRPCRoute-created-deleted", func(next *store.Snapshot, i int) {
			// Every other round a GRPCRoute created, then deleted: the listener's
			// attachedRoutes change, so the whole attachment is made again (Attach).
			if i%2 == 1 {
				next.GRPCRoutes = next.GRPCRoutes[:len(next.GRPCRoutes)-1]
				return
			}
			r := next.GRPCRoutes[0].DeepCopy()
			r.Name, r.UID, r.ResourceVersion = fmt.Sprintf("new-%d", i), types.UID(fmt.Sprintf("uid-new-%d", i)), fmt.Sprint(i+2)
			next.GRPCRoutes = append(next.GRPCRoutes, r)
		}},
		{"TCPRoute", func(next *store.Snapshot, i int) {
			k := i % len(next.TCPRoutes)
			r := next.TCPRoutes[k].DeepCopy()
			r.ResourceVersion, r.Generation = fmt.Sprint(i+2), r.Generation+1
			port := gatewayv1.PortNumber(80 + i%2)
			r.Spec.Rules[0].BackendRefs[0].Port = &port
			next.TCPRoutes[k] = r
		}},
		{"TLSRoute", func(next *store.Snapshot, i int) {
			k := i % len(next.TLSRoutes)
			r := next.TLSRoutes[k].DeepCopy()
			r.ResourceVersion, r.Generation = fmt.Sprint(i+2), r.Generation+1
			r.Spec.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(fmt.Sprintf("changed-%d.example.com", i))}
			next.TLSRoutes[k] = r
		}},
	}
	for _, e := range edits {
		for _, mode := range []string{"incremental", "full"} {
			b.Run(fmt.Sprintf("grpcroutes=3000/l4routes=300/changed=%s/%s", e.kind, mode), func(b *testing.B) {
				benchIncrementalRoundsWith(b, mode, opts, base, func(snap *store.Snapshot, i int) *store.Snapshot {
					next := *snap
					next.GRPCRoutes = append([]*gatewayv1.GRPCRoute(nil), snap.GRPCRoutes...)
					next.TCPRoutes = append([]*gatewayv1.TCPRoute(nil), snap.TCPRoutes...)
					next.TLSRoutes = append([]*gatewayv1.TLSRoute(nil), snap.TLSRoutes...)
					if i >= 0 {
						e.edit(&next, i)
					}
					return &next
				}, func(res Result) {
					if len(res.State.Services) < 3000 {
						b.Fatalf("unexpected result: %d services", len(res.State.Services))
					}
				})
			})
		}
	}
}
