package integration

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/konductor/konductor/internal/kongemu"
)

// KIC's --metrics-access-filter=rbac: /metrics answers only a bearer token that the API server
// authenticates and authorizes for GET /metrics: none is 401, a ServiceAccount without the
// permission 403, one granted it (a ClusterRole on the non-resource URL) 200.
func TestMetricsAccessFilterRBAC(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := newNamespace(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())

	kong := startEmulator(t, kongemu.DBLess)
	r := startReplica(t, replicaSpec{name: "r1", namespace: ns, gateways: []string{kong.URL}, args: []string{
		"--leader-elect=false", "--metrics-bind-address", addr, "--metrics-access-filter", "rbac",
	}})
	r.waitFirstSync(t, time.Minute)

	cs, err := kubernetes.NewForConfig(adminConfig)
	require.NoError(t, err)
	token := func(name string) string {
		sa, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		require.NoError(t, err)
		tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		require.NoError(t, err)
		return tok.Status.Token
	}
	granted, other := token("scraper"), token("other")
	// Granted before the first request: the filter caches a denial for 30 seconds.
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns + "-metrics"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-metrics"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "scraper"}}}
	require.NoError(t, admin.Create(ctx, role))
	require.NoError(t, admin.Create(ctx, binding))
	t.Cleanup(func() { _ = admin.Delete(context.Background(), binding); _ = admin.Delete(context.Background(), role) })
	status := func(token string) int {
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Eventually(t, func() bool { return status("") == http.StatusUnauthorized }, 30*time.Second, 50*time.Millisecond, "no token")
	require.Equal(t, http.StatusForbidden, status(other), "a token without the permission")
	require.Eventually(t, func() bool { return status(granted) == http.StatusOK }, 30*time.Second, 100*time.Millisecond, "a token granted GET /metrics")
}
