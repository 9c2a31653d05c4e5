package integration

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/dataplane/dbmode"
	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/manifest"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// A KIC user's key-auth setup, DB-less: a KongConsumer with a key-auth credential Secret and
// a key-auth KongPlugin on an Ingress. Kong holds the consumer, its credential and the
// route's plugin; deleting the credential's Secret removes the credential.
func TestConsumerWithKeyAuthDBLess(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := newNamespace(t)
	objs := app(ns, "echo", "echo.example.com")
	objs[2].SetAnnotations(map[string]string{"konghq.com/plugins": "key-auth"})
	objs = append(objs,
		&kongv1.KongPlugin{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "key-auth"}, PluginName: "key-auth"},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alice-key", Labels: map[string]string{"konghq.com/credential": "key-auth"}},
			StringData: map[string]string{"key": "alice-secret"}},
		&kongv1.KongConsumer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alice", Annotations: map[string]string{"kubernetes.io/ingress.class": "kong"}},
			Username: "alice", Credentials: []string{"alice-key"}},
	)
	createAll(t, objs)
	kong := startEmulator(t, kongemu.DBLess)
	r := startReplica(t, replicaSpec{name: "r1", namespace: ns, gateways: []string{kong.URL}, args: []string{"--leader-elect=false"}})
	r.waitFirstSync(t, time.Minute)

	require.NotNil(t, kong.Entity("consumers", "alice"), "the consumer")
	keys := kong.Entities("keyauth_credentials")
	require.Len(t, keys, 1, "its credential")
	require.Equal(t, "alice-secret", keys[0]["key"])
	plugins := kong.Entities("plugins")
	require.Len(t, plugins, 1)
	require.Equal(t, "key-auth", plugins[0]["name"])
	route := kong.Entity("routes", routeName(ns, "echo"))
	require.NotNil(t, route)
	require.Equal(t, route["id"], plugins[0]["route"].(map[string]any)["id"], "the plugin is on the Ingress's route")

	// The leader writes the Programmed condition of the consumer and the plugin.
	for _, obj := range []client.Object{&kongv1.KongConsumer{}, &kongv1.KongPlugin{}} {
		name := map[bool]string{true: "alice", false: "key-auth"}[fmt.Sprintf("%T", obj) == "*v1.KongConsumer"]
		require.Eventually(t, func() bool {
			if admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj) != nil {
				return false
			}
			var conds []metav1.Condition
			switch o := obj.(type) {
			case *kongv1.KongConsumer:
				conds = o.Status.Conditions
			case *kongv1.KongPlugin:
				conds = o.Status.Conditions
			}
			c := meta.FindStatusCondition(conds, "Programmed")
			return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == obj.GetGeneration()
		}, 30*time.Second, 50*time.Millisecond, "%s %s is Programmed", fmt.Sprintf("%T", obj), name)
	}

	require.NoError(t, admin.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alice-key"}}))
	require.Eventually(t, func() bool { return len(kong.Entities("keyauth_credentials")) == 0 }, 30*time.Second, 20*time.Millisecond,
		"the credential goes with its Secret")
	require.NotNil(t, kong.Entity("consumers", "alice"), "the consumer stays")
}

// A Kong on the expressions router (GET / says router_flavor: expressions) gets its routes as
// expressions with KIC's priorities (translation-rules.md §13), without a restart of anything: the
// controller learns the flavor on its first contact and renders again.
func TestExpressionsRouter(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	createAll(t, app(ns, "echo", "echo.example.com"))
	srv, err := kongemu.New(kongemu.Options{Mode: kongemu.DBLess, RouterFlavor: kongemu.RouterExpressions}).Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	r := startReplica(t, replicaSpec{name: "r1", namespace: ns, gateways: []string{srv.URL}, args: []string{"--leader-elect=false"}})
	r.waitFirstSync(t, time.Minute)

	require.Eventually(t, func() bool {
		route := srv.Entity("routes", routeName(ns, "echo"))
		return route != nil && route["expression"] != nil
	}, 30*time.Second, 20*time.Millisecond, "the route is rendered as an expression")
	route := srv.Entity("routes", routeName(ns, "echo"))
	require.Equal(t, `(http.host == "echo.example.com") && (http.path ^= "/")`, route["expression"])
	require.Empty(t, route["paths"])
	require.Empty(t, route["hosts"])
}

// Database mode, a Kong that KIC filled: consumers with credentials of several types, a
// consumer group (Kong Enterprise), a consumer plugin and a CA certificate, written by decK
// from the translation of the same objects (as KIC writes through decK). The controller
// adopts it: its first sync creates nothing and deletes nothing.
func TestDatabaseModeAdoptsConsumersAndCACertificates(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := newNamespace(t)
	objs, err := manifest.Load(filepath.Join(repoRoot(), "internal", "dataplane", "dbmode", "testdata", "consumers.yaml"))
	require.NoError(t, err)
	for _, o := range objs {
		o.SetNamespace(ns)
		o.SetUID("")
		o.SetResourceVersion("")
	}
	createAll(t, append(objs, app(ns, "echo", "echo.example.com")...))

	kong, err := kongemu.New(kongemu.Options{Mode: kongemu.Postgres, Edition: kongemu.Enterprise}).Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = kong.Close() })

	// What KIC wrote: the translation of the objects as the API server holds them (UIDs
	// included), synced by decK.
	st := store.New(admin, store.Options{Namespaces: []string{ns}, Kinds: store.NewKindSet(store.AllKinds()...)})
	snap, err := st.Snapshot(ctx)
	require.NoError(t, err)
	state, problems := translator.Translate(snap, translator.Options{})
	require.Empty(t, problems)
	require.Len(t, state.Consumers, 3) // alice, bob, and carol with only a custom_id
	require.Len(t, state.CACertificates, 1)
	seed, err := dbmode.New(kong.URL, &http.Client{}, dbmode.Options{})
	require.NoError(t, err)
	_, err = seed.Apply(ctx, state)
	require.NoError(t, err)
	require.Len(t, kong.Entities("consumers"), 3)
	require.Len(t, kong.Entities("keyauth_credentials"), 2)
	require.Len(t, kong.Entities("consumer_groups"), 1)

	mark := kong.AuditMark()
	r := startReplica(t, replicaSpec{name: "adopter", namespace: ns, gateways: []string{kong.URL}, args: handoverArgs(ns)})
	r.waitFirstSync(t, time.Minute)
	deletes, _, posts := writes(kong.AuditSince(mark))
	require.Empty(t, deletes, "nothing KIC wrote is deleted:\n%s", describe(deletes))
	require.Empty(t, posts, "nothing is created again:\n%s", describe(posts))
}
