package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/konductor/konductor/internal/konnect"
	"github.com/konductor/konductor/internal/store"
)

// Konnect in the chart (docs/konnect.md): KIC's charts' ingressController.konnect.* (kong/kong)
// and controller.ingressController.konnect.* (kong/ingress), or konductor's konnect.* (the same
// keys), become the CONTROLLER_KONNECT_* variables kong/kong's _helpers.tpl sets
// (kong.ingressController.env); with licensing, a Role grants the controller the Secret the
// license is kept in (config/rbac/konnect_license_role.yaml).

// konnectSecretRef is a variable's secretKeyRef: the Secret's name and key.
type konnectSecretRef struct{ name, key string }

// secretRefsOf returns the controller's variables set from a secretKeyRef.
func secretRefsOf(t *testing.T, ctrl map[string]any) map[string]konnectSecretRef {
	t.Helper()
	out := map[string]konnectSecretRef{}
	envs, _, _ := unstructured.NestedSlice(ctrl, "env")
	for _, e := range envs {
		m := e.(map[string]any)
		name, _, _ := unstructured.NestedString(m, "valueFrom", "secretKeyRef", "name")
		key, _, _ := unstructured.NestedString(m, "valueFrom", "secretKeyRef", "key")
		if name != "" {
			out[m["name"].(string)] = konnectSecretRef{name, key}
		}
	}
	return out
}

// konnectEnv is the controller's CONTROLLER_KONNECT_* variables (NAME -> value, "<valueFrom>"
// for those from a valueFrom).
func konnectEnv(environ []string) map[string]string {
	out := map[string]string{}
	for _, kv := range environ {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "CONTROLLER_KONNECT_") {
			out[k] = v
		}
	}
	return out
}

// configKonnectRole is config/rbac's Role for the license Secret.
func configKonnectRole(t *testing.T) []rbacv1.PolicyRule {
	t.Helper()
	return rulesOf(t, find(render(t, "rbac"), "Role", "konductor-konnect-license"))
}

func TestChartKonnect(t *testing.T) {
	parallel(t)
	cert := func(secret string) map[string]konnectSecretRef {
		return map[string]konnectSecretRef{
			"CONTROLLER_KONNECT_TLS_CLIENT_CERT": {secret, "tls.crt"},
			"CONTROLLER_KONNECT_TLS_CLIENT_KEY":  {secret, "tls.key"},
		}
	}
	for _, tc := range []struct {
		name, release, values string
		// env is every CONTROLLER_KONNECT_* variable, "<valueFrom>" for those from a valueFrom;
		// refs the secretKeyRefs among them.
		env  map[string]string
		refs map[string]konnectSecretRef
		// controlPlane is the control plane the controller parses (""; Konnect off).
		controlPlane string
		// licenseSecret is the Role's resourceNames ("" no Role, "*" none: any Secret).
		licenseSecret string
	}{
		{name: "defaults", release: "konductor"},
		{
			name: "kong/kong: sync", release: "kong", values: `
ingressController:
  konnect: {enabled: true, controlPlaneID: cp-1, tlsClientCertSecretName: my-konnect-tls}
`,
			env: map[string]string{
				"CONTROLLER_KONNECT_SYNC_ENABLED":     "true",
				"CONTROLLER_KONNECT_CONTROL_PLANE_ID": "cp-1",
				"CONTROLLER_KONNECT_ADDRESS":          "https://us.kic.api.konghq.com", // apiHostname's default, KIC's
				"CONTROLLER_KONNECT_TLS_CLIENT_CERT":  "<valueFrom>",
				"CONTROLLER_KONNECT_TLS_CLIENT_KEY":   "<valueFrom>",
			},
			refs:         cert("my-konnect-tls"),
			controlPlane: "cp-1",
		},
		{
			name: "kong/ingress: runtimeGroupID and apiHostname with licensing", release: "kong", values: `
controller:
  ingressController:
    konnect:
      enabled: true
      runtimeGroupID: rg-1
      apiHostname: eu.kic.api.konghq.com
      license: {enabled: true}
`,
			env: map[string]string{
				"CONTROLLER_KONNECT_SYNC_ENABLED":      "true",
				"CONTROLLER_KONNECT_CONTROL_PLANE_ID":  "rg-1", // KIC's chart 3.x: runtimeGroupID as the control plane
				"CONTROLLER_KONNECT_ADDRESS":           "https://eu.kic.api.konghq.com",
				"CONTROLLER_KONNECT_LICENSING_ENABLED": "true",
				"CONTROLLER_KONNECT_TLS_CLIENT_CERT":   "<valueFrom>",
				"CONTROLLER_KONNECT_TLS_CLIENT_KEY":    "<valueFrom>",
			},
			refs:          cert("konnect-client-tls"),
			controlPlane:  "rg-1",
			licenseSecret: "konnect-license-rg-1",
		},
		{
			name: "controlPlaneID over runtimeGroupID", release: "kong", values: `
ingressController:
  konnect: {enabled: true, controlPlaneID: cp-new, runtimeGroupID: rg-old, license: {enabled: true}}
`,
			env: map[string]string{
				"CONTROLLER_KONNECT_SYNC_ENABLED":      "true",
				"CONTROLLER_KONNECT_CONTROL_PLANE_ID":  "cp-new",
				"CONTROLLER_KONNECT_ADDRESS":           "https://us.kic.api.konghq.com",
				"CONTROLLER_KONNECT_LICENSING_ENABLED": "true",
				"CONTROLLER_KONNECT_TLS_CLIENT_CERT":   "<valueFrom>",
				"CONTROLLER_KONNECT_TLS_CLIENT_KEY":    "<valueFrom>",
			},
			refs:          cert("konnect-client-tls"),
			controlPlane:  "cp-new",
			licenseSecret: "konnect-license-cp-new",
		},
		{
			name: "konductor's own keys with license storage off", release: "konductor", values: `
konnect: {enabled: true, controlPlaneID: cp-2, license: {enabled: true}}
env: {konnect_license_storage_enabled: false}
`,
			env: map[string]string{
				"CONTROLLER_KONNECT_SYNC_ENABLED":            "true",
				"CONTROLLER_KONNECT_CONTROL_PLANE_ID":        "cp-2",
				"CONTROLLER_KONNECT_ADDRESS":                 "https://us.kic.api.konghq.com",
				"CONTROLLER_KONNECT_LICENSING_ENABLED":       "true",
				"CONTROLLER_KONNECT_LICENSE_STORAGE_ENABLED": "false",
				"CONTROLLER_KONNECT_TLS_CLIENT_CERT":         "<valueFrom>",
				"CONTROLLER_KONNECT_TLS_CLIENT_KEY":          "<valueFrom>",
			},
			refs:         cert("konnect-client-tls"),
			controlPlane: "cp-2",
			// Nothing stored: no Role.
		},
		{
			// env wins over what the chart derives, in any of its key forms; a certificate
			// given as files instead of the Secret.
			name: "env wins", release: "kong", values: `
ingressController:
  konnect: {enabled: true, controlPlaneID: cp-3, tlsClientCertSecretName: "", license: {enabled: true}}
  env:
    konnect_address: https://konnect.example.com
    KONNECT_RUNTIME_GROUP_ID: cp-env
    konnect-tls-client-cert-file: /etc/konnect/tls.crt
    konnect_tls_client_key_file: /etc/konnect/tls.key
`,
			env: map[string]string{
				"CONTROLLER_KONNECT_SYNC_ENABLED":         "true",
				"CONTROLLER_KONNECT_CONTROL_PLANE_ID":     "cp-3",
				"CONTROLLER_KONNECT_RUNTIME_GROUP_ID":     "cp-env",
				"CONTROLLER_KONNECT_ADDRESS":              "https://konnect.example.com",
				"CONTROLLER_KONNECT_LICENSING_ENABLED":    "true",
				"CONTROLLER_KONNECT_TLS_CLIENT_CERT_FILE": "/etc/konnect/tls.crt",
				"CONTROLLER_KONNECT_TLS_CLIENT_KEY_FILE":  "/etc/konnect/tls.key",
			},
			// --konnect-runtime-group-id is applied after --konnect-control-plane-id: the
			// controller's control plane, and the Secret the Role names, are env's.
			controlPlane:  "cp-env",
			licenseSecret: "konnect-license-cp-env",
		},
		{
			// As KIC's charts: license.enabled without enabled sets nothing (the notes say so).
			name: "license without konnect.enabled", release: "kong", values: `
ingressController:
  konnect: {license: {enabled: true}, controlPlaneID: cp-4}
`,
		},
		{
			// Licensing through env alone: the Role follows the controller's settings.
			name: "licensing from env", release: "konductor", values: `
env:
  konnect_licensing_enabled: "true"
  konnect_control_plane_id: cp-5
  konnect_tls_client_cert: PEM
  konnect_tls_client_key: PEM
`,
			env: map[string]string{
				"CONTROLLER_KONNECT_LICENSING_ENABLED": "true",
				"CONTROLLER_KONNECT_CONTROL_PLANE_ID":  "cp-5",
				"CONTROLLER_KONNECT_TLS_CLIENT_CERT":   "PEM",
				"CONTROLLER_KONNECT_TLS_CLIENT_KEY":    "PEM",
			},
			controlPlane:  "cp-5",
			licenseSecret: "konnect-license-cp-5",
		},
		{
			// A control plane the chart cannot read: get and update on any Secret of the
			// namespace.
			name: "control plane from a ConfigMap", release: "konductor", values: `
konnect: {enabled: true, license: {enabled: true}}
env:
  konnect_control_plane_id: {valueFrom: {configMapKeyRef: {name: konnect, key: control-plane}}}
`,
			env: map[string]string{
				"CONTROLLER_KONNECT_SYNC_ENABLED":      "true",
				"CONTROLLER_KONNECT_CONTROL_PLANE_ID":  "<valueFrom>",
				"CONTROLLER_KONNECT_ADDRESS":           "https://us.kic.api.konghq.com",
				"CONTROLLER_KONNECT_LICENSING_ENABLED": "true",
				"CONTROLLER_KONNECT_TLS_CLIENT_CERT":   "<valueFrom>",
				"CONTROLLER_KONNECT_TLS_CLIENT_KEY":    "<valueFrom>",
			},
			refs:          cert("konnect-client-tls"),
			controlPlane:  "<valueFrom>",
			licenseSecret: "*",
		},
		{
			name: "rbac.create false", release: "konductor", values: `
rbac: {create: false}
konnect: {enabled: true, controlPlaneID: cp-6, license: {enabled: true}}
`,
			env: map[string]string{
				"CONTROLLER_KONNECT_SYNC_ENABLED":      "true",
				"CONTROLLER_KONNECT_CONTROL_PLANE_ID":  "cp-6",
				"CONTROLLER_KONNECT_ADDRESS":           "https://us.kic.api.konghq.com",
				"CONTROLLER_KONNECT_LICENSING_ENABLED": "true",
				"CONTROLLER_KONNECT_TLS_CLIENT_CERT":   "<valueFrom>",
				"CONTROLLER_KONNECT_TLS_CLIENT_KEY":    "<valueFrom>",
			},
			refs:         cert("konnect-client-tls"),
			controlPlane: "cp-6",
		},
	} {
		t.Run(strings.ReplaceAll(tc.name, "/", "-"), func(t *testing.T) {
			objs := mustTemplate(t, tc.release, "kong", tc.values)
			fullname := tc.release + "-konductor"
			if tc.release == "konductor" {
				fullname = "konductor"
			}
			ctrl, args, environ := controllerOf(t, objs, fullname)
			want := tc.env
			if want == nil {
				want = map[string]string{}
			}
			require.Equal(t, want, konnectEnv(environ))
			refs := secretRefsOf(t, ctrl)
			for name := range refs {
				if !strings.HasPrefix(name, "CONTROLLER_KONNECT_") {
					delete(refs, name)
				}
			}
			wantRefs := tc.refs
			if wantRefs == nil {
				wantRefs = map[string]konnectSecretRef{}
			}
			require.Equal(t, wantRefs, refs, "the certificate's variables come from the Secret's tls.crt and tls.key")

			// konductor takes the variables (a valueFrom stands for its value).
			parsed := make([]string, 0, len(environ))
			for _, kv := range environ {
				if k, v, _ := strings.Cut(kv, "="); v == "<valueFrom>" && strings.HasPrefix(k, "CONTROLLER_KONNECT_") {
					kv = k + "=<valueFrom:" + k + ">"
				}
				parsed = append(parsed, kv)
			}
			cfg := parseController(t, args, parsed)
			if tc.controlPlane == "<valueFrom>" {
				require.Equal(t, "<valueFrom:CONTROLLER_KONNECT_CONTROL_PLANE_ID>", cfg.Konnect.ControlPlaneID)
			} else {
				require.Equal(t, tc.controlPlane, cfg.Konnect.ControlPlaneID)
			}
			require.Equal(t, want["CONTROLLER_KONNECT_SYNC_ENABLED"] == "true", cfg.Konnect.SyncEnabled)
			require.Equal(t, want["CONTROLLER_KONNECT_LICENSING_ENABLED"] == "true", cfg.Konnect.LicensingEnabled)
			if a, ok := want["CONTROLLER_KONNECT_ADDRESS"]; ok {
				require.Equal(t, a, cfg.Konnect.Address)
			}

			role := find(objs, "Role", fullname+"-konnect-license")
			binding := find(objs, "RoleBinding", fullname+"-konnect-license")
			if tc.licenseSecret == "" {
				require.Nil(t, role, "no Role without the license stored")
				require.Nil(t, binding)
				return
			}
			require.NotNil(t, role)
			require.Equal(t, "kong", role.GetNamespace(), "the controller's namespace (POD_NAMESPACE)")
			var names []string
			if tc.licenseSecret != "*" {
				names = []string{tc.licenseSecret}
			}
			rules := rulesOf(t, role)
			require.Equal(t, []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: names, Verbs: []string{"get", "update"}},
				{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
			}, rules)
			require.Equal(t, grants(configKonnectRole(t)), grants(rules), "what config/rbac/konnect_license_role.yaml grants, narrowed to the one Secret")
			require.Equal(t, "kong", binding.GetNamespace())
			requireBinding(t, binding, "Role", fullname+"-konnect-license", "kong", fullname)
		})
	}
}

// The notes say where the configuration goes and which Secret must exist; license.enabled
// alone is named as not applied.
func TestChartKonnectNotes(t *testing.T) {
	parallel(t)
	n := notes(t, "controller: {ingressController: {konnect: {enabled: true, runtimeGroupID: rg-1, apiHostname: eu.kic.api.konghq.com, license: {enabled: true}}}}\n")
	require.Contains(t, n, "Konnect control plane rg-1 (https://eu.kic.api.konghq.com), and the license comes from it (kept in the Secret konnect-license-rg-1)")
	require.Contains(t, n, "the Secret kong/konnect-client-tls (tls.crt, tls.key)")
	n = notes(t, "ingressController: {konnect: {license: {enabled: true}}}\n")
	require.Contains(t, n, "accepted but not applied: konnect.license.enabled without konnect.enabled")
	require.NotContains(t, n, "Konnect control plane")
	require.NotContains(t, notes(t, ""), "Konnect")
}

// The chart's objects with Konnect licensing are accepted by a real API server, and the Role
// is enough for the license store (internal/konnect/license.go, SecretStore): holding it
// alone, the controller's ServiceAccount creates the Secret, reads it, updates it, and
// touches no other Secret of the namespace. (In the controller the store's reads go through
// the manager's cache, whose list and watch of Secrets the ClusterRole grants.)
func TestChartKonnectLicenseRoleIsEnough(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	values := "konnect: {enabled: true, controlPlaneID: cp-rbac, license: {enabled: true}}\n"
	t.Run("applies", func(t *testing.T) {
		objs := chartDryRunApplier(t)(t, values)
		roles := 0
		for _, o := range objs {
			if (o.GetKind() == "Role" || o.GetKind() == "RoleBinding") && strings.HasSuffix(o.GetName(), "-konductor-konnect-license") {
				roles++
			}
		}
		require.Equal(t, 2, roles, "the Role and its RoleBinding")
	})

	ns := newNamespace(t)
	release := "lic-" + ns
	objs := mustTemplate(t, release, ns, values)
	fullname := release + "-konductor"
	for _, kind := range []string{"Role", "RoleBinding"} {
		o := find(objs, kind, fullname+"-konnect-license")
		require.NotNil(t, o, kind)
		require.NoError(t, admin.Create(ctx, o.DeepCopy()))
	}
	other := &corev1.Secret{}
	other.Namespace, other.Name = ns, "not-the-license"
	require.NoError(t, admin.Create(ctx, other))

	user, err := env.AddUser(envtest.User{Name: "system:serviceaccount:" + ns + ":" + fullname}, adminConfig)
	require.NoError(t, err)
	c, err := client.New(user.Config(), client.Options{Scheme: store.NewScheme()})
	require.NoError(t, err)

	s := konnect.NewSecretStore(c, c, ns, "cp-rbac")
	first := konnect.License{ID: "lic-1", Payload: `{"license":{}}`, UpdatedAt: 100}
	require.NoError(t, s.Save(ctx, first), "created")
	got, err := s.Load(ctx)
	require.NoError(t, err)
	require.Equal(t, first.ID, got.ID)
	newer := konnect.License{ID: "lic-2", Payload: `{"license":{"v":2}}`, UpdatedAt: 200}
	require.NoError(t, s.Save(ctx, newer), "updated")
	got, err = s.Load(ctx)
	require.NoError(t, err)
	require.Equal(t, newer.ID, got.ID)
	require.Equal(t, newer.UpdatedAt, got.UpdatedAt)

	var stored corev1.Secret
	require.NoError(t, admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "konnect-license-cp-rbac"}, &stored))
	require.Equal(t, newer.Payload, string(stored.Data["payload"]))

	// Only that Secret: another control plane's, or any other Secret, is not readable.
	_, err = konnect.NewSecretStore(c, c, ns, "cp-other").Load(ctx)
	require.Error(t, err)
	require.True(t, apierrors.IsForbidden(err) || strings.Contains(err.Error(), "forbidden"), "%v", err)
	err = c.Get(ctx, client.ObjectKeyFromObject(other), &corev1.Secret{})
	require.True(t, apierrors.IsForbidden(err), "%v", err)
}
