package integration

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/manager"
	"github.com/konductor/konductor/internal/store"
)

// A controller that may not list Secrets must not sync a configuration without them: the first
// sync waits, the log names the kind, and once the permission is granted it goes ahead.
func TestRBACForbiddenKindBlocksTheFirstSync(t *testing.T) {
	ns := newNamespace(t)
	apps(t, ns, 2)
	kong := startEmulator(t, kongemu.DBLess)
	ctx := context.Background()

	user, err := env.AddUser(envtest.User{Name: "konductor-" + ns}, adminConfig)
	require.NoError(t, err)
	// Every kind the store reads but Secrets.
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
	}
	for _, k := range store.AllKinds() {
		if k != store.KindSecret {
			rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{k.GroupVersionKind().Group}, Resources: []string{k.Resource()}, Verbs: []string{"get", "list", "watch"}})
		}
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "konductor-" + ns}, Rules: rules}
	require.NoError(t, admin.Create(ctx, role))
	require.NoError(t, admin.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "konductor-" + ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "konductor-" + ns}},
	}))

	r := startReplica(t, replicaSpec{name: "restricted", namespace: ns, gateways: []string{kong.URL},
		restConfig: user.Config(), args: []string{"--leader-elect", "--election-id", "restricted-" + ns}})

	require.Eventually(t, func() bool { return r.logs.contains("RBAC forbids list/watch", "Secret") }, 30*time.Second, 10*time.Millisecond,
		"the log names the kind that cannot be listed")
	// Reads are allowed (the gateways' GET / is asked while the cache syncs); no write is.
	writes := func() int {
		n := 0
		for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			n += kong.RequestCount(m, "/")
		}
		return n
	}
	require.Never(t, func() bool { return writes() > 0 }, 2*time.Second, 20*time.Millisecond,
		"nothing may reach Kong while a kind cannot be listed")

	// A replica stopped while it waits for that kind still stops (controller-runtime alone
	// would not return until the cache synced).
	defer func(g time.Duration) { manager.ShutdownGrace = g }(manager.ShutdownGrace)
	manager.ShutdownGrace = time.Second
	stuck := startReplica(t, replicaSpec{name: "stuck", namespace: ns, gateways: []string{kong.URL},
		restConfig: user.Config(), args: []string{"--leader-elect", "--election-id", "stuck-" + ns}})
	require.Eventually(t, func() bool { return stuck.logs.contains("RBAC forbids list/watch", "Secret") }, 30*time.Second, 10*time.Millisecond)
	stuck.cancel()
	select {
	case err := <-stuck.done:
		require.ErrorContains(t, err, "manager still waiting for caches")
		stuck.stopOnce.Do(func() {}) // stopped: the cleanup has nothing left to do
	case <-time.After(30 * time.Second):
		t.Fatal("a replica waiting for a forbidden kind did not stop")
	}

	role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch"}})
	require.NoError(t, admin.Update(ctx, role))
	r.waitFirstSync(t, 2*time.Minute)
	require.Len(t, kong.Entities("routes"), 2)
}

// Kinds whose CRD is not installed are left out with one line at start; the rest syncs.
func TestMissingCRDIsSkipped(t *testing.T) {
	bare := &envtest.Environment{BinaryAssetsDirectory: env.BinaryAssetsDirectory}
	cfg, err := bare.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = bare.Stop() })

	kong := startEmulator(t, kongemu.DBLess)
	r := startReplica(t, replicaSpec{name: "no-crds", namespace: "default", gateways: []string{kong.URL},
		restConfig: cfg, args: []string{"--leader-elect=false"}})
	r.waitFirstSync(t, time.Minute)
	require.True(t, r.logs.contains("CRD not installed; kind skipped", "KongPlugin"), r.logs.String())
	require.True(t, r.logs.contains("CRD not installed; kind skipped", "KongClusterPlugin"))
	require.Equal(t, 1, r.logs.count("CRD not installed; kind skipped", `"KongPlugin"`), "one line per kind, at start")
	require.False(t, r.logs.contains("does not translate yet"), "no Kong CRDs, nothing untranslated")
}
