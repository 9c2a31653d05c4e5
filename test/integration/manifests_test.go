package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	kongv1beta1 "github.com/kong/kubernetes-configuration/api/configuration/v1beta1"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	eventsv1 "k8s.io/api/events/v1"
	netv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/konductor/konductor/internal/config"
	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/store"
)

var overlays = []string{"dbless", "database"}

// render builds a kustomization under config/ with the kustomize library (what
// `kubectl kustomize` runs) and returns its objects in order.
func render(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	resMap, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(repoRoot(), "config", dir))
	require.NoError(t, err, "kustomize build config/%s", dir)
	var out []*unstructured.Unstructured
	for _, r := range resMap.Resources() {
		b, err := r.MarshalJSON()
		require.NoError(t, err)
		u := &unstructured.Unstructured{}
		require.NoError(t, u.UnmarshalJSON(b))
		out = append(out, u)
	}
	return out
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// warningCollector keeps the API server's warnings (PodSecurity speaks through them).
type warningCollector struct {
	mu       sync.Mutex
	warnings []string
}

func (w *warningCollector) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, text)
}

func (w *warningCollector) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.warnings
	w.warnings = nil
	return out
}

// Every object of every overlay is accepted by a real kube-apiserver (server-side apply, dry
// run), with Kong's CRDs installed; the namespace is created for real first, as
// `kubectl apply -k` would. The namespace enforces the "restricted" Pod Security Standard, so
// the Deployment must also pass PodSecurity admission without a warning.
func TestManifestsOverlaysApplyToAPIServer(t *testing.T) {
	ctx := context.Background()
	warnings := &warningCollector{}
	cfg := rest.CopyConfig(adminConfig)
	cfg.WarningHandlerWithContext = warnings
	c, err := client.New(cfg, client.Options{})
	require.NoError(t, err)

	apply := func(o *unstructured.Unstructured) error {
		return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()),
			client.DryRunAll, client.ForceOwnership, client.FieldOwner("konductor-manifests-test"))
	}

	for _, overlay := range overlays {
		t.Run(overlay, func(t *testing.T) {
			objs := render(t, filepath.Join("overlays", overlay))
			require.NotEmpty(t, objs)
			for _, o := range objs {
				if o.GetKind() != "Namespace" {
					continue
				}
				ns := o.DeepCopy()
				ns.SetResourceVersion("")
				err := c.Create(ctx, ns)
				if apierrors.IsAlreadyExists(err) {
					err = c.Update(ctx, withVersion(t, c, ns))
				}
				require.NoError(t, err, "creating namespace %s", o.GetName())
			}
			warnings.take()
			for _, o := range objs {
				require.NoError(t, apply(o), "server-side dry-run apply of %s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
				require.Empty(t, warnings.take(), "warnings for %s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
			}
			checkOverlay(t, overlay, objs)
		})
	}

	// Control: PodSecurity is active, so the absence of warnings above means something.
	bad := find(render(t, filepath.Join("overlays", "dbless")), "Deployment", "konductor")
	require.NoError(t, unstructured.SetNestedField(bad.Object, false, "spec", "template", "spec", "securityContext", "runAsNonRoot"))
	warnings.take()
	require.NoError(t, apply(bad))
	w := warnings.take()
	if len(w) == 0 {
		t.Log("PodSecurity admission gave no warning for a Pod template that runs as root: it is not enabled on this API server, so only schema validity was checked")
	} else {
		require.Contains(t, strings.Join(w, "\n"), "restricted")
	}
}

func withVersion(t *testing.T, c client.Client, o *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(o.GroupVersionKind())
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(o), cur))
	o.SetResourceVersion(cur.GetResourceVersion())
	return o
}

// checkOverlay holds the parts of each overlay that the design depends on.
func checkOverlay(t *testing.T, overlay string, objs []*unstructured.Unstructured) {
	t.Helper()
	class := find(objs, "IngressClass", "kong")
	require.NotNil(t, class, "IngressClass kong")
	ctrlName, _, _ := unstructured.NestedString(class.Object, "spec", "controller")
	require.Equal(t, "ingress-controllers.konghq.com/kong", ctrlName)
	for _, name := range []string{"kongplugins.configuration.konghq.com", "kongclusterplugins.configuration.konghq.com"} {
		require.NotNil(t, find(objs, "CustomResourceDefinition", name), name)
	}

	dep := find(objs, "Deployment", "konductor")
	require.NotNil(t, dep)
	replicas, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas")
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	byName := map[string]map[string]any{}
	for _, c := range containers {
		m := c.(map[string]any)
		byName[m["name"].(string)] = m
	}
	ctrl := byName["controller"]
	require.NotNil(t, ctrl)
	args, _, _ := unstructured.NestedStringSlice(ctrl, "args")
	require.Equal(t, "run", args[0])
	// The arguments must be flags the controller accepts.
	_, err := config.Parse(args[1:], func(string) string { return "" })
	require.NoError(t, err, "controller args %v", args)
	for probe, path := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		p, _, _ := unstructured.NestedString(ctrl, probe, "httpGet", "path")
		require.Equal(t, path, p, probe)
	}
	sc, _, _ := unstructured.NestedMap(ctrl, "securityContext")
	require.Equal(t, true, sc["readOnlyRootFilesystem"])
	require.Equal(t, true, sc["runAsNonRoot"])
	require.Equal(t, false, sc["allowPrivilegeEscalation"])
	drop, _, _ := unstructured.NestedStringSlice(ctrl, "securityContext", "capabilities", "drop")
	require.Equal(t, []string{"ALL"}, drop)
	_, hasLimits, _ := unstructured.NestedMap(ctrl, "resources", "limits")
	require.True(t, hasLimits)

	switch overlay {
	case "dbless":
		require.EqualValues(t, 1, replicas)
		require.Contains(t, args, "--kong-admin-url=http://localhost:8001")
		require.Contains(t, args, "--leader-elect=false")
		require.Contains(t, args, "--publish-service=kong/kong-proxy")
		proxy := byName["proxy"]
		require.NotNil(t, proxy, "the Kong proxy runs in the controller's Pod")
		require.Equal(t, "kong:3.9", proxy["image"])
		env := map[string]string{}
		envs, _, _ := unstructured.NestedSlice(proxy, "env")
		for _, e := range envs {
			m := e.(map[string]any)
			if v, ok := m["value"].(string); ok {
				env[m["name"].(string)] = v
			}
		}
		require.Equal(t, "off", env["KONG_DATABASE"])
		require.Equal(t, "127.0.0.1:8001", env["KONG_ADMIN_LISTEN"])
		require.NotNil(t, find(objs, "Service", "kong-proxy"))
	case "database":
		require.EqualValues(t, 2, replicas)
		require.Len(t, byName, 1, "the controller alone; Kong and PostgreSQL are installed separately")
		require.Contains(t, args, "--leader-elect=true")
		require.Contains(t, args, "--kong-admin-url=http://kong-admin.kong.svc:8001")
	}
}

// rbacRules are the rendered ClusterRole's and leader-election Role's rules.
func rbacRules(t *testing.T) (cluster, lease []rbacv1.PolicyRule) {
	t.Helper()
	objs := render(t, "rbac")
	decode := func(kind, name string) []rbacv1.PolicyRule {
		o := find(objs, kind, name)
		require.NotNil(t, o, "%s %s", kind, name)
		var typed struct {
			Rules []rbacv1.PolicyRule `json:"rules"`
		}
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &typed))
		return typed.Rules
	}
	return decode("ClusterRole", "konductor"), decode("Role", "konductor-leader-election")
}

// The ClusterRole names every kind the store reads and nothing beyond what the controller
// uses: read verbs on those kinds, create/patch on events. The Role is the Lease only.
func TestManifestsRBACIsLeastPrivilege(t *testing.T) {
	cluster, lease := rbacRules(t)
	granted := map[string][]string{} // group/resource -> verbs
	for _, r := range cluster {
		require.Empty(t, r.ResourceNames)
		require.Empty(t, r.NonResourceURLs)
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				require.NotContains(t, []string{"*"}, res)
				granted[g+"/"+res] = append(granted[g+"/"+res], r.Verbs...)
			}
		}
	}
	want := map[string][]string{
		"/events":                            {"create", "patch"},
		"events.k8s.io/events":               {"create", "patch"},
		"networking.k8s.io/ingresses/status": {"patch"}, // internal/status/ingress.go
		// internal/manager/optionalkinds.go: CRDs installed or removed while running
		"apiextensions.k8s.io/customresourcedefinitions": {"get", "list", "watch"},
	}
	for _, r := range []string{"kongplugins", "kongclusterplugins", "kongconsumers", "kongconsumergroups", "kongvaults", "kongcustomentities", "konglicenses"} {
		want["configuration.konghq.com/"+r+"/status"] = []string{"patch"} // internal/status/programmed.go, license.go
	}
	want["configuration.konghq.com/kongupstreampolicies/status"] = []string{"patch"} // internal/status/upstreampolicy.go
	for _, r := range []string{"tcpingresses", "udpingresses"} {
		want["configuration.konghq.com/"+r+"/status"] = []string{"patch"} // internal/status/ingress.go
	}
	for _, r := range []string{"gatewayclasses", "gateways", "listenersets", "httproutes", "grpcroutes", "tcproutes", "tlsroutes", "udproutes"} {
		want["gateway.networking.k8s.io/"+r+"/status"] = []string{"patch"} // internal/status/gatewayapi_updater.go
	}
	for _, r := range []string{"backendtlspolicies"} {
		want["gateway.networking.k8s.io/"+r+"/status"] = []string{"patch"} // internal/status/gatewayapi_policies.go
	}
	for _, k := range store.AllKinds() {
		want[k.GroupVersionKind().Group+"/"+k.Resource()] = []string{"get", "list", "watch"}
	}
	for k := range granted {
		slices.Sort(granted[k])
	}
	require.Equal(t, want, granted, "the ClusterRole must match internal/store/kinds.go and the event recorders exactly")

	require.Len(t, lease, 1)
	require.Equal(t, []string{"coordination.k8s.io"}, lease[0].APIGroups)
	require.Equal(t, []string{"leases"}, lease[0].Resources)
	require.ElementsMatch(t, []string{"get", "create", "update"}, lease[0].Verbs)
}

// A controller whose only permissions are the rendered ClusterRole and Role, with leader
// election on, becomes leader, completes its first sync, writes events and publishes Ingress
// and Gateway API status: the least privilege is enough.
func TestManifestsRBACIsEnough(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	objs := app(ns, "echo", "echo.example.com")
	objs = append(objs, app(ns, "broken", "broken.example.com")...)
	objs[len(objs)-1].SetAnnotations(map[string]string{"konghq.com/plugins": "no-such-plugin"}) // a problem: an Event
	controller := "konductor.test/" + ns
	class, gw := gatewayOf(ns, controller)
	objs = append(objs, class, gw, httpRoute(ns, "web", "http", "echo"))
	objs[0].SetAnnotations(map[string]string{kongv1beta1.KongUpstreamPolicyAnnotationKey: "lc"}) // the echo Service
	objs = append(objs, &kongv1beta1.KongUpstreamPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lc"},
		Spec: kongv1beta1.KongUpstreamPolicySpec{Algorithm: ptr.To("least-connections")}})
	tcp := &kongv1beta1.TCPIngress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db", Annotations: map[string]string{"kubernetes.io/ingress.class": "kong"}},
		Spec: kongv1beta1.TCPIngressSpec{Rules: []kongv1beta1.IngressRule{{Port: 5432, Backend: kongv1beta1.IngressBackend{ServiceName: "db", ServicePort: 80}}}}}
	objs = append(objs, tcp)
	objs = append(objs, app(ns, "db", "db.example.com")[:2]...)
	createAll(t, objs)
	t.Cleanup(func() { _ = admin.Delete(context.Background(), class) })
	kong := startEmulator(t, kongemu.DBLess)

	cluster, lease := rbacRules(t)
	userName := "system:serviceaccount:" + ns + ":konductor"
	user, err := env.AddUser(envtest.User{Name: userName}, adminConfig)
	require.NoError(t, err)
	subject := []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: userName}}
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "konductor-" + ns}, Rules: cluster}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "konductor-" + ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
		Subjects: subject}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "konductor-leader-election"}, Rules: lease}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "konductor-leader-election"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: subject}
	for _, o := range []client.Object{cr, crb, role, rb} {
		require.NoError(t, admin.Create(ctx, o))
	}
	t.Cleanup(func() {
		_ = admin.Delete(context.Background(), crb)
		_ = admin.Delete(context.Background(), cr)
	})

	r := startReplica(t, replicaSpec{name: "least-privilege", namespace: ns, gateways: []string{kong.URL},
		restConfig: user.Config(), args: []string{"--leader-elect=true", "--publish-status-address=192.0.2.10", "--gateway-api-controller-name=" + controller,
			"--election-lease-duration=4s", "--election-renew-deadline=3s", "--election-retry-period=500ms"}})
	select {
	case <-r.ctrl.Elected():
	case <-time.After(time.Minute):
		t.Fatalf("not elected within a minute:\n%s", r.logs)
	}
	r.waitFirstSync(t, time.Minute)
	require.False(t, r.logs.contains("forbid"), "no permission was missing:\n%s", r.logs)
	require.False(t, r.logs.contains("Forbidden"), "no permission was missing:\n%s", r.logs)

	var l coordinationv1.Lease
	require.NoError(t, admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: config.DefaultElectionID}, &l))
	require.NotEmpty(t, l.Spec.HolderIdentity)

	routes := map[string]bool{}
	for _, rt := range kong.Entities("routes") {
		routes[fmt.Sprint(rt["name"])] = true
	}
	require.True(t, routes[routeName(ns, "echo")], "routes: %v", routes)

	require.Eventually(t, func() bool {
		var ing netv1.Ingress
		if admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "echo"}, &ing) != nil {
			return false
		}
		lb := ing.Status.LoadBalancer.Ingress
		return len(lb) == 1 && lb[0].IP == "192.0.2.10"
	}, 30*time.Second, 50*time.Millisecond, "the controller could publish the Ingress status")
	require.Eventually(t, func() bool {
		var got kongv1beta1.TCPIngress
		if admin.Get(ctx, client.ObjectKeyFromObject(tcp), &got) != nil {
			return false
		}
		lb := got.Status.LoadBalancer.Ingress
		return len(lb) == 1 && lb[0].IP == "192.0.2.10"
	}, 30*time.Second, 50*time.Millisecond, "the controller could publish the TCPIngress status")
	require.Eventually(t, func() bool {
		var got kongv1beta1.KongUpstreamPolicy
		return admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "lc"}, &got) == nil && len(got.Status.Ancestors) == 1
	}, 30*time.Second, 50*time.Millisecond, "the controller could write the KongUpstreamPolicy status")
	require.Eventually(t, func() bool { return gatewayAPIStatusWritten(ctx, ns, controller, "web") },
		30*time.Second, 50*time.Millisecond, "the controller could write the status of the GatewayClass, the Gateway and the HTTPRoute")

	require.Eventually(t, func() bool {
		var evs eventsv1.EventList
		if err := admin.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return false
		}
		for _, e := range evs.Items {
			if e.Regarding.Name == "broken" && e.Reason == "KongConfigurationTranslationFailed" {
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "the controller could write the Event about the broken Ingress")
}
