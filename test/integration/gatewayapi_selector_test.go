package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/kongemu"
)

// A listener admitting routes by namespace Selector (the route is in the Gateway's own
// namespace: the selector decides all the same): a route in a namespace without the label is
// NotAllowedByListeners; labelling the namespace (a change to a Namespace's
// metadata only) attaches the route and Kong gets it; removing the label detaches it again.
func TestGatewayAPINamespaceSelector(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := newNamespace(t)
	controller := "konductor.test/" + ns
	label := "gateway-access-" + ns
	createAll(t, app(ns, "echo", "echo.example.com")[:2])
	class, gw := gatewayOf(ns, controller)
	from := gatewayv1.NamespacesFromSelector
	gw.Spec.Listeners[0].AllowedRoutes = &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{
		From: &from, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{label: "true"}}}}
	route := httpRoute(ns, "web", "http", "echo")
	createAll(t, []client.Object{class, gw, route})
	t.Cleanup(func() { _ = admin.Delete(context.Background(), class) })

	kong := startEmulator(t, kongemu.DBLess)
	r := startReplica(t, replicaSpec{name: "r1", namespace: ns, gateways: []string{kong.URL}, args: []string{
		"--leader-elect=false", "--gateway-api-controller-name", controller, "--publish-status-address", "192.0.2.10",
	}})
	r.waitFirstSync(t, time.Minute)

	accepted := func() string {
		var hr gatewayv1.HTTPRoute
		if admin.Get(ctx, client.ObjectKeyFromObject(route), &hr) != nil {
			return ""
		}
		for _, p := range hr.Status.Parents {
			if string(p.ControllerName) == controller {
				if c := meta.FindStatusCondition(p.Conditions, "Accepted"); c != nil {
					return string(c.Status) + "/" + c.Reason
				}
			}
		}
		return ""
	}
	routeName := fmt.Sprintf("httproute.%s.web.0.0", ns)
	inKong := func() bool { return loadedEntity(kong.LoadedConfig(), "services", "routes", routeName) != nil }
	setLabel := func(value string) {
		require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var n corev1.Namespace
			if err := admin.Get(ctx, client.ObjectKey{Name: ns}, &n); err != nil {
				return err
			}
			if value == "" {
				delete(n.Labels, label)
			} else {
				if n.Labels == nil {
					n.Labels = map[string]string{}
				}
				n.Labels[label] = value
			}
			return admin.Update(ctx, &n)
		}))
	}

	require.Eventually(t, func() bool { return accepted() == "False/NotAllowedByListeners" }, 30*time.Second, 50*time.Millisecond)
	require.False(t, inKong())

	setLabel("true")
	require.Eventually(t, func() bool { return accepted() == "True/Accepted" && inKong() }, 30*time.Second, 50*time.Millisecond,
		"the label attaches the route")

	setLabel("")
	require.Eventually(t, func() bool { return accepted() == "False/NotAllowedByListeners" && !inKong() }, 30*time.Second, 50*time.Millisecond,
		"without the label the route is detached")
}
