package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	kongv1alpha1 "github.com/kong/kubernetes-configuration/api/configuration/v1alpha1"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/translator"
)

// A KIC user's KongCustomEntity, DB-less, on Kong Gateway Enterprise: a degraphql_routes
// entity attached through its parentRef to the KongPlugin on an Ingress. The controller learns
// the entity's schema from the gateway (GET /schemas/degraphql_routes), and the gateway holds
// the entity with its service foreign key filled; the entity's Programmed condition turns
// True. A custom entity Kong refuses (its query is missing) is traced back to its object by
// its fields (custom entities have no tags) and left out by the fallback configuration, with
// Programmed False; the rest syncs. A KongLicense reaches the same Enterprise gateway as its
// licenses entity.
func TestCustomEntityAndLicenseReachTheGatewayDBLess(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	objs := app(ns, "graphql", "graphql.example.com")
	objs[2].SetAnnotations(map[string]string{"konghq.com/plugins": "graphql"})
	license := &kongv1alpha1.KongLicense{ObjectMeta: metav1.ObjectMeta{Name: "license-" + ns},
		RawLicenseString: `{"license":{"payload":{"license_key":"` + ns + `"}}}`, Enabled: true}
	objs = append(objs,
		&kongv1.KongPlugin{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "graphql"}, PluginName: "correlation-id"},
		&kongv1alpha1.KongCustomEntity{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "contacts"},
			Spec: kongv1alpha1.KongCustomEntitySpec{EntityType: "degraphql_routes", ControllerName: "kong",
				ParentRef: &kongv1alpha1.ObjectReference{Group: ptr.To("configuration.konghq.com"), Kind: ptr.To("KongPlugin"), Name: "graphql"},
				Fields:    apiextensionsv1.JSON{Raw: []byte(`{"uri":"/contacts","query":"query{ contacts { name } }"}`)}}},
		&kongv1alpha1.KongCustomEntity{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "broken"},
			Spec: kongv1alpha1.KongCustomEntitySpec{EntityType: "degraphql_routes", ControllerName: "kong",
				Fields: apiextensionsv1.JSON{Raw: []byte(`{"uri":"/broken"}`)}}},
		license,
	)
	createAll(t, objs)
	t.Cleanup(func() { _ = admin.Delete(context.Background(), license) })
	kong, err := kongemu.New(kongemu.Options{Mode: kongemu.DBLess, Edition: kongemu.Enterprise}).Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = kong.Close() })
	r := startReplica(t, replicaSpec{name: "r1", namespace: ns, gateways: []string{kong.URL}, args: []string{"--leader-elect=false"}})
	r.waitFirstSync(t, time.Minute)

	require.Eventually(t, func() bool { return len(kong.Entities("degraphql_routes")) == 1 }, 30*time.Second, 20*time.Millisecond,
		"the good custom entity, without the refused one")
	service := kong.Entity("services", ns+".graphql.80")
	require.NotNil(t, service)
	routes := kong.Entities("degraphql_routes")
	require.Equal(t, "/contacts", routes[0]["uri"])
	require.Equal(t, service["id"], routes[0]["service"].(map[string]any)["id"], "attached to the plugin's service")

	licenses := kong.Entities("licenses")
	found := false
	for _, l := range licenses {
		found = found || l["id"] == translator.LicenseID(license.Name)
	}
	// Licenses are cluster-scoped: another test's KongLicense may be newer and chosen.
	require.True(t, found || len(licenses) == 1, "a license reaches the Enterprise gateway")

	condition := func(name string, status metav1.ConditionStatus, message string) func() bool {
		return func() bool {
			var ce kongv1alpha1.KongCustomEntity
			if admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &ce) != nil {
				return false
			}
			c := meta.FindStatusCondition(ce.Status.Conditions, "Programmed")
			return c != nil && c.Status == status && c.ObservedGeneration == ce.Generation && strings.Contains(c.Message, message)
		}
	}
	require.Eventually(t, condition("contacts", metav1.ConditionTrue, ""), 30*time.Second, 50*time.Millisecond,
		"the KongCustomEntity is Programmed")
	require.Eventually(t, condition("broken", metav1.ConditionFalse, "Kong refused it: invalid query: required field missing"),
		30*time.Second, 50*time.Millisecond, "the refused KongCustomEntity is not Programmed, with Kong's message")
}
