package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	sigsyaml "sigs.k8s.io/yaml"
)

// olderVersionCRDs writes the Gateway API CRDs of TCPRoute, UDPRoute, TLSRoute and
// BackendTLSPolicy as a cluster with Gateway API CRDs up to v1.4 (v1.3 for BackendTLSPolicy)
// has them: served (and stored) only at the version KIC 3.5 reads, v1alpha2 or v1alpha3.
// They are the repository's own CRDs (v1.6.3, which hold those versions' schemas, not
// served) with the served versions changed: no download, no other module version.
func olderVersionCRDs(t *testing.T) (paths, replaced []string) {
	t.Helper()
	dir := t.TempDir()
	for file, older := range map[string]string{
		"gateway.networking.k8s.io_tcproutes.yaml":          "v1alpha2",
		"gateway.networking.k8s.io_udproutes.yaml":          "v1alpha2",
		"gateway.networking.k8s.io_tlsroutes.yaml":          "v1alpha2",
		"gateway.networking.k8s.io_backendtlspolicies.yaml": "v1alpha3",
	} {
		src := filepath.Join(repoRoot(), "config", "crd", file)
		data, err := os.ReadFile(src)
		require.NoError(t, err)
		var crd apiextensionsv1.CustomResourceDefinition
		require.NoError(t, sigsyaml.Unmarshal(data, &crd))
		found := false
		for i := range crd.Spec.Versions {
			v := &crd.Spec.Versions[i]
			v.Served, v.Storage = v.Name == older, v.Name == older
			found = found || v.Name == older
		}
		require.True(t, found, "%s has a %s schema", file, older)
		out, err := sigsyaml.Marshal(&crd)
		require.NoError(t, err)
		p := filepath.Join(dir, file)
		require.NoError(t, os.WriteFile(p, out, 0o644))
		paths, replaced = append(paths, p), append(replaced, src)
	}
	return paths, replaced
}

// On a cluster that serves TCPRoute only at v1alpha2 (Gateway API CRDs up to v1.4), KIC 3.5
// reads it there and so does konductor: a v1alpha2 TCPRoute reaches Kong as a stream route
// and gets its parents status, written at v1alpha2. The CRD upgraded to serve v1 too, the
// kind moves to v1 without the route leaving Kong in any push.
func TestGatewayAPIOlderVersionsRead(t *testing.T) {
	older, replaced := olderVersionCRDs(t)
	o := startOwnEnv(t, append(crdsExcept(t, replaced...), older...)...)
	ctx := context.Background()
	ns := "versions"
	controller := "konductor.test/" + ns
	o.createNamespace(t, ns)
	o.createAll(t, app(ns, "echo", "echo.example.com")[:2])
	// A listener each for the route made before the move and the one made after: the
	// oldest TCPRoute on a port takes it (docs/gateway-api.md).
	class, gw := ourGateway(ns, controller, gatewayv1.Listener{Name: "tcp", Protocol: gatewayv1.TCPProtocolType, Port: 9000},
		gatewayv1.Listener{Name: "tcp2", Protocol: gatewayv1.TCPProtocolType, Port: 9001})
	port := gatewayv1.PortNumber(80)
	section, section2 := gatewayv1.SectionName("tcp"), gatewayv1.SectionName("tcp2")
	tcp := &gatewayv1alpha2.TCPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "echo-tcp"}, Spec: gatewayv1alpha2.TCPRouteSpec{
		CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "kong", SectionName: &section}}},
		Rules: []gatewayv1alpha2.TCPRouteRule{{BackendRefs: []gatewayv1.BackendRef{{
			BackendObjectReference: gatewayv1.BackendObjectReference{Name: "echo", Port: &port}}}}},
	}}
	o.createAll(t, []client.Object{class, gw, tcp})

	kong := startPushRecorder(t)
	r := startReplica(t, replicaSpec{name: "r1", namespace: ns, gateways: []string{kong.srv.URL}, restConfig: o.config, args: []string{
		"--leader-elect=false", "--gateway-api-controller-name", controller, "--publish-status-address", "192.0.2.10",
		"--feature-gates=GatewayAlpha=true",
	}})
	r.waitFirstSync(t, time.Minute)
	require.True(t, r.logs.contains("CRD serves an older version only; kind read at it", "TCPRoute", "v1alpha2"))
	require.True(t, r.logs.contains("CRD serves an older version only; kind read at it", "BackendTLSPolicy", "v1alpha3"))
	require.False(t, r.logs.contains("CRD not installed; kind skipped", "TCPRoute"))

	name := fmt.Sprintf("tcproute.%s.echo-tcp.0.0", ns)
	streamRoute := func() bool {
		route := loadedEntity(kong.kong.LoadedConfig(), "services", "routes", name)
		dests, _ := route["destinations"].([]any)
		if route == nil || len(dests) != 1 {
			return false
		}
		d, _ := dests[0].(map[string]any)
		return fmt.Sprint(route["protocols"]) == "[tcp]" && fmt.Sprint(d["port"]) == "9000"
	}
	require.Eventually(t, streamRoute, 30*time.Second, 50*time.Millisecond, "Kong has the v1alpha2 TCPRoute's stream route %s", name)
	tags := fmt.Sprint(loadedEntity(kong.kong.LoadedConfig(), "services", "routes", name)["tags"])
	require.Contains(t, tags, "k8s-version:v1alpha2", "tagged with the version read, as KIC tags it")

	for _, typ := range []string{"Accepted", "ResolvedRefs"} {
		var have string
		require.Eventually(t, func() bool {
			var got gatewayv1alpha2.TCPRoute // the only version the cluster serves
			if o.client.Get(ctx, client.ObjectKeyFromObject(tcp), &got) != nil {
				return false
			}
			for _, p := range got.Status.Parents {
				if string(p.ControllerName) == controller {
					if c := meta.FindStatusCondition(p.Conditions, typ); c != nil {
						have = string(c.Status) + "/" + c.Reason
					}
				}
			}
			return have == "True/"+typ
		}, 30*time.Second, 50*time.Millisecond, "TCPRoute parent %s: have %s", typ, &have)
	}

	// The CRD upgraded: v1 served too (v1alpha2 still the storage version, as an upgrade in
	// place leaves it until the objects are migrated). v1 is preferred: the kind moves.
	crdScheme := runtime.NewScheme()
	require.NoError(t, apiextensionsv1.AddToScheme(crdScheme))
	crds, err := client.New(o.config, client.Options{Scheme: crdScheme})
	require.NoError(t, err)
	var crd apiextensionsv1.CustomResourceDefinition
	require.NoError(t, crds.Get(ctx, client.ObjectKey{Name: "tcproutes.gateway.networking.k8s.io"}, &crd))
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == "v1" {
			crd.Spec.Versions[i].Served = true
		}
	}
	require.NoError(t, crds.Update(ctx, &crd))
	require.Eventually(t, func() bool {
		return r.logs.contains("CRD serves another version; kind now read at it", "TCPRoute", "v1")
	}, time.Minute, 20*time.Millisecond, "the controller reads TCPRoutes at v1 now")
	// A route made now, at v1, is read: the v1 informer runs.
	tcp2 := &gatewayv1.TCPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "echo-tcp2"}, Spec: gatewayv1.TCPRouteSpec{
		CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "kong", SectionName: &section2}}},
		Rules: []gatewayv1.TCPRouteRule{{BackendRefs: []gatewayv1.BackendRef{{
			BackendObjectReference: gatewayv1.BackendObjectReference{Name: "echo", Port: &port}}}}},
	}}
	o.createAll(t, []client.Object{tcp2})
	require.Eventually(t, func() bool {
		return loadedEntity(kong.kong.LoadedConfig(), "services", "routes", fmt.Sprintf("tcproute.%s.echo-tcp2.0.0", ns)) != nil
	}, 30*time.Second, 50*time.Millisecond, "a TCPRoute made at v1 after the move reaches Kong")
	require.True(t, streamRoute())
	for i, n := range kong.history("routes") {
		require.GreaterOrEqual(t, n, 1, "push %d: the first route never left Kong: %v", i, kong.history("routes"))
	}
	require.False(t, r.logs.contains("not syncing: the cache could not be read"), "no round failed while the kind moved")
}
