package integration

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/konductor/konductor/internal/store"
)

// The property of controller-runtime's cache-backed client that the design leans on (and that
// docs/architecture.md records): before the cache starts, a read fails with
// ErrCacheNotStarted; once it has started, a List blocks until that kind's informer has synced
// and then returns every object, never a partial list; a kind that cannot be listed blocks
// until the caller's deadline and fails, never returns empty.
func TestCacheBackedClientBlocksUntilTheInformerSynced(t *testing.T) {
	ns := newNamespace(t)
	const n = 300
	for i := range n {
		nm := fmt.Sprintf("app-%04d", i)
		createAll(t, app(ns, nm, nm+".example.com")[2:]) // Ingresses only
	}
	for round := range 3 {
		c, err := cache.New(adminConfig, cache.Options{Scheme: store.NewScheme(), DefaultNamespaces: map[string]cache.Config{ns: {}}})
		require.NoError(t, err)
		_, err = c.GetInformer(context.Background(), &netv1.Ingress{}, cache.BlockUntilSynced(false))
		require.NoError(t, err)

		var list netv1.IngressList
		var notStarted *cache.ErrCacheNotStarted
		require.ErrorAs(t, c.List(context.Background(), &list), &notStarted, "round %d: a read before start fails", round)

		ctx, cancel := context.WithCancel(context.Background())
		go func() { _ = c.Start(ctx) }()
		// Read at once, racing the informer's initial list. Until Start has marked the cache
		// started the read fails (an error, never an empty list); from then on it waits for
		// the informer and returns every object.
		for {
			err := c.List(ctx, &list)
			if errors.As(err, &notStarted) {
				runtime.Gosched()
				continue
			}
			require.NoError(t, err)
			break
		}
		require.Len(t, list.Items, n, "round %d: the first List that succeeds returns every object", round)
		cancel()
	}
}

func TestCacheBackedClientFailsForAForbiddenKind(t *testing.T) {
	ctx := context.Background()
	name := "no-secrets-" + newNamespace(t) // unique, so the test can run again on the same server
	user, err := env.AddUser(envtest.User{Name: name}, adminConfig)
	require.NoError(t, err)
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"list", "watch"}},
	}}
	require.NoError(t, admin.Create(ctx, role))
	require.NoError(t, admin.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: name}},
	}))
	c, err := cache.New(user.Config(), cache.Options{Scheme: store.NewScheme()})
	require.NoError(t, err)
	for _, obj := range []client.Object{&corev1.Service{}, &corev1.Secret{}} {
		_, err = c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		require.NoError(t, err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = c.Start(runCtx) }()

	var services corev1.ServiceList
	require.Eventually(t, func() bool { return c.List(ctx, &services) == nil }, 10*time.Second, time.Millisecond)

	deadline, cancelRead := context.WithTimeout(ctx, time.Second)
	defer cancelRead()
	var secrets corev1.SecretList
	err = c.List(deadline, &secrets)
	require.Error(t, err, "a forbidden kind must not read as empty")
	require.True(t, errors.Is(deadline.Err(), context.DeadlineExceeded))
	require.Empty(t, secrets.Items)
}
