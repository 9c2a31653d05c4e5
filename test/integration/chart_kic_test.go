package integration

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// charts/konductor takes the values of KIC's charts (docs/migration-from-kic.md, "The Helm
// chart takes KIC's values"): kong/kong's ingressController.* and deployment-level keys,
// kong/ingress's controller.ingressController.* and controller.*; Kong's own keys are accepted
// and named in the notes. The charts' values files are in testdata/kic-charts.

func kicValuesFile(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "kic-charts", name))
	require.NoError(t, err)
	var v map[string]any
	require.NoError(t, yaml.Unmarshal(b, &v))
	return v
}

// kicKeys lists the paths of values' keys: every leaf under the prefixes in leafUnder, and
// elsewhere the subtrees at depth 2 (each with all its defaults).
func kicKeys(values map[string]any, leafUnder []string) [][]string {
	var out [][]string
	var walk func(v any, path []string)
	walk = func(v any, path []string) {
		m, ok := v.(map[string]any)
		leaf := !ok || len(m) == 0
		perLeaf := len(path) > 0 && slices.Contains(leafUnder, path[0])
		if leaf || (!perLeaf && len(path) == 2) {
			out = append(out, slices.Clone(path))
			return
		}
		for k, x := range m {
			walk(x, append(path, k))
		}
	}
	walk(values, nil)
	sort.Slice(out, func(i, j int) bool { return strings.Join(out[i], ".") < strings.Join(out[j], ".") })
	return out
}

// at returns the value at path in values, and the values that hold it alone under prefix.
func at(values map[string]any, path []string, prefix ...string) string {
	var v any = values
	for _, k := range path {
		v = v.(map[string]any)[k]
	}
	full := append(slices.Clone(prefix), path...)
	for i := len(full) - 1; i >= 0; i-- {
		v = map[string]any{full[i]: v}
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// merged returns the values that hold every one of paths of values (with their defaults)
// under prefix.
func merged(values map[string]any, paths [][]string, prefix ...string) string {
	out := map[string]any{}
	for _, path := range paths {
		var v any = values
		for _, k := range path {
			v = v.(map[string]any)[k]
		}
		full := append(slices.Clone(prefix), path...)
		m := out
		for _, k := range full[:len(full)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		m[full[len(full)-1]] = v
	}
	b, err := yaml.Marshal(out)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Every key of KIC's charts' values files, set under its KIC prefix with its default,
// renders: kong/kong's at the top level (a kong/kong values file) and under controller. (the
// kong/ingress chart's controller release, which is the kong/kong chart), kong/ingress's as
// they are. Leaves one by one under ingressController; Kong's sections by their second-level
// keys (all their leaves at once). The keys are rendered in groups (one helm run each: 534
// runs alone took five minutes of make test's two cores); a group that fails is rendered key
// by key, so that the failure names its key.
func TestChartKICValuesKeysRender(t *testing.T) {
	parallel(t)
	type group struct {
		name   string
		values map[string]any
		paths  [][]string
		prefix []string
	}
	var groups []group
	add := func(name string, values map[string]any, paths [][]string, prefix ...string) {
		const size = 40
		for i := 0; i < len(paths); i += size {
			groups = append(groups, group{name, values, paths[i:min(i+size, len(paths))], prefix})
		}
	}
	kong := kicValuesFile(t, "kong-kong-3.4.1-values.yaml")
	kongKeys := kicKeys(kong, []string{"ingressController"})
	add("kong/kong", kong, kongKeys)
	add("kong/kong under controller.", kong, kongKeys, "controller")
	ingress := kicValuesFile(t, "kong-ingress-0.24.0-values.yaml")
	ingressKeys := kicKeys(ingress, []string{"controller", "gateway", "deployment"})
	add("kong/ingress", ingress, ingressKeys)
	keys := 0
	for _, g := range groups {
		keys += len(g.paths)
	}
	require.Greater(t, keys, 400)
	renders := 0
	for _, g := range groups {
		renders++
		if _, err := helmTemplate(t, "kong", "kong", merged(g.values, g.paths, g.prefix...)); err == nil {
			continue
		}
		for _, path := range g.paths {
			renders++
			values := at(g.values, path, g.prefix...)
			if _, err := helmTemplate(t, "kong", "kong", values); err != nil {
				t.Errorf("%s %s: %s\n%v", g.name, strings.Join(path, "."), values, err)
			}
		}
	}
	t.Logf("%d keys rendered in %d helm runs", keys, renders)
}

// A values file for kong/kong with the controller's keys a user sets, unchanged.
const kongKongStyleValues = `
image:
  repository: kong/kong-gateway   # Kong's
  tag: "3.9"
  pullPolicy: Always
  pullSecrets: [registry-a]
env:
  database: "off"                 # Kong's KONG_DATABASE
  router_flavor: traditional
resources: {limits: {cpu: "2"}}   # Kong's container
admin: {enabled: true, type: ClusterIP}
proxy: {type: LoadBalancer, nameOverride: edge-proxy}
replicaCount: 2
podAnnotations: {example.com/team: edge}
podLabels: {tier: edge}
deploymentAnnotations: {example.com/owner: platform}
extraLabels: {cost-center: "42"}
nodeSelector: {kubernetes.io/os: linux}
tolerations: [{key: dedicated, operator: Equal, value: edge, effect: NoSchedule}]
priorityClassName: ""
terminationGracePeriodSeconds: 45
securityContext: {fsGroup: 2000}
containerSecurityContext:
  enabled: true
  readOnlyRootFilesystem: true
  allowPrivilegeEscalation: false
  runAsUser: 1000
  runAsGroup: 1000
  runAsNonRoot: true
  seccompProfile: {type: RuntimeDefault}
  capabilities: {drop: [ALL]}
updateStrategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}
podDisruptionBudget: {enabled: true, minAvailable: 1, unhealthyPodEvictionPolicy: IfHealthyBudget}
deployment:
  revisionHistoryLimit: 3
  serviceAccount: {create: true, name: kong-sa, annotations: {example.com/role: controller}}
  userDefinedVolumes: [{name: admin-ca, configMap: {name: kong-admin-ca}}]
extraObjects:
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: "{{ .Release.Name }}-extra", namespace: "{{ .Release.Namespace }}"}
    data: {a: b}
ingressController:
  enabled: true
  image: {repository: registry.example.com/konductor, tag: v0.1.0}
  args: [--log-level=debug]
  env:
    kong_admin_tls_skip_verify: false
    kong_admin_concurrency: 4
    kong_admin_token: {valueFrom: {secretKeyRef: {name: kong-admin-token, key: token}}}
  customEnv: {TZ: Europe/Berlin}
  gatewayDiscovery:
    enabled: true
    adminApiService: {namespace: kong-gw, name: kong-gw-kong-admin}
  watchNamespaces: [team-a, team-b]
  admissionWebhook:
    enabled: true
    failurePolicy: Fail
    port: 8443
    matchPolicy: Exact
    objectSelector: {matchExpressions: [{key: owner, operator: NotIn, values: [helm]}]}
    namespaceSelector: {matchExpressions: [{key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system]}]}
    matchConditions: [{name: not-system, expression: "!request.userInfo.username.startsWith('system:')"}]
    timeoutSeconds: 5
    service: {labels: {team: edge}}
  ingressClass: edge
  createIngressClass: true
  ingressClassAnnotations: {example.com/class: edge}
  userDefinedVolumeMounts: [{name: admin-ca, mountPath: /etc/admin-ca, readOnly: true}]
  rbac: {create: true}
  resources: {requests: {cpu: 50m, memory: 64Mi}, limits: {cpu: 500m, memory: 256Mi}}
  readinessProbe: {httpGet: {path: /readyz, port: 10254, scheme: HTTP}, periodSeconds: 7}
  livenessProbe: {httpGet: {path: /healthz, port: 10254, scheme: HTTP}, periodSeconds: 11}
`

// A values file for kong/ingress (the chart's own values file's keys and the controller's a
// user sets), unchanged.
const kongIngressStyleValues = `
deployment: {test: {enabled: false}}
controller:
  proxy: {nameOverride: "{{ .Release.Name }}-gateway-proxy"}
  enabled: true
  deployment: {kong: {enabled: false}}
  replicaCount: 3
  autoscaling: {enabled: true, minReplicas: 2, maxReplicas: 4}
  podDisruptionBudget: {enabled: true, maxUnavailable: "50%"}
  image: {pullSecrets: [{name: registry-b}]}
  ingressController:
    enabled: true
    image: {repository: registry.example.com/konductor, tag: v0.1.0}
    gatewayDiscovery: {enabled: true, generateAdminApiService: true}
    env: {log_level: debug}
    watchNamespaces: [apps]
  podAnnotations:
    kuma.io/gateway: enabled
    traffic.kuma.io/exclude-outbound-ports: "8444"
  serviceMonitor: {enabled: true, labels: {release: prometheus}, honorLabels: true, targetLabels: [team], relabelings: [{action: keep, sourceLabels: [__name__], regex: "kong.*"}]}
gateway:
  enabled: true
  deployment: {kong: {enabled: true}}
  admin: {enabled: true, type: ClusterIP, clusterIP: None}
  ingressController: {enabled: false}
  env: {role: traditional, database: "off"}
`

var kicValueSets = map[string]string{
	"defaults":     "",
	"kong/kong":    kongKongStyleValues,
	"kong/ingress": kongIngressStyleValues,
}

func TestChartKICLint(t *testing.T) {
	parallel(t)
	sets := map[string]string{}
	for k, v := range kicValueSets {
		sets[k] = v
	}
	for _, f := range []string{"kong-kong-3.4.1-values.yaml", "kong-ingress-0.24.0-values.yaml"} {
		b, err := os.ReadFile(filepath.Join("testdata", "kic-charts", f))
		require.NoError(t, err)
		sets[f] = string(b)
	}
	for name, values := range sets {
		t.Run(name, func(t *testing.T) {
			out, err := helm(t, "lint", "--strict", chartDir(), "--values", valuesFile(t, values))
			require.NoError(t, err)
			require.Contains(t, out, "0 chart(s) failed")
		})
	}
}

func deploymentOf(t *testing.T, objs []*unstructured.Unstructured, name string) *appsv1.Deployment {
	t.Helper()
	u := find(objs, "Deployment", name)
	require.NotNil(t, u, "Deployment %s", name)
	var d appsv1.Deployment
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d))
	return &d
}

// What the kong/kong-style and kong/ingress-style values render: each KIC key where konductor's
// own key would put it, Kong's keys nowhere.
func TestChartKICRendersController(t *testing.T) {
	parallel(t)
	t.Run("kong/kong", func(t *testing.T) {
		objs := mustTemplate(t, "kong", "kong", kongKongStyleValues)
		_, args, environ := controllerOf(t, objs, "kong-konductor")
		cfg := parseController(t, args, slices.DeleteFunc(slices.Clone(environ), func(kv string) bool {
			return strings.HasPrefix(kv, "CONTROLLER_KONG_ADMIN_TOKEN=") // valueFrom
		}))
		token, _ := envValue(environ, "CONTROLLER_KONG_ADMIN_TOKEN")
		require.Equal(t, "<valueFrom>", token)
		svc, _ := envValue(environ, "CONTROLLER_KONG_ADMIN_SVC")
		require.Equal(t, "kong-gw/kong-gw-kong-admin", svc, "gatewayDiscovery.adminApiService")
		require.Equal(t, "debug", cfg.LogLevel, "ingressController.args")
		require.False(t, cfg.KongAdminTLSSkipVerify, "ingressController.env over the default")
		require.Equal(t, 4, cfg.KongAdminConcurrency)
		tz, _ := envValue(environ, "TZ")
		require.Equal(t, "Europe/Berlin", tz, "ingressController.customEnv")
		for _, kv := range environ {
			require.NotContains(t, kv, "DATABASE", "Kong's env is not the controller's")
			require.NotContains(t, kv, "ROUTER_FLAVOR")
		}
		require.Equal(t, []string{"team-a", "team-b"}, cfg.WatchNamespaces)
		require.Equal(t, "edge", cfg.IngressClass)
		require.Equal(t, "kong-ingress-controller-leader-edge", cfg.ElectionID)
		require.Equal(t, "kong/edge-proxy", cfg.PublishService, "proxy.nameOverride")
		require.Equal(t, ":8443", cfg.AdmissionWebhook.ListenAddr)

		d := deploymentOf(t, objs, "kong-konductor")
		pod := d.Spec.Template.Spec
		ctrl := pod.Containers[0]
		require.Equal(t, "registry.example.com/konductor:v0.1.0", ctrl.Image, "ingressController.image, not Kong's image")
		require.Equal(t, corev1.PullAlways, ctrl.ImagePullPolicy, "image.pullPolicy, as KIC's chart")
		require.Equal(t, []corev1.LocalObjectReference{{Name: "registry-a"}}, pod.ImagePullSecrets, "image.pullSecrets")
		require.Equal(t, "500m", ctrl.Resources.Limits.Cpu().String(), "ingressController.resources, not Kong's")
		require.EqualValues(t, 7, ctrl.ReadinessProbe.PeriodSeconds)
		require.EqualValues(t, 11, ctrl.LivenessProbe.PeriodSeconds)
		require.EqualValues(t, 2, *d.Spec.Replicas)
		require.EqualValues(t, 3, *d.Spec.RevisionHistoryLimit)
		require.Equal(t, appsv1.RollingUpdateDeploymentStrategyType, d.Spec.Strategy.Type)
		require.Equal(t, "platform", d.Annotations["example.com/owner"])
		require.Equal(t, "42", d.Labels["cost-center"])
		require.Equal(t, "edge", pod.Tolerations[0].Value)
		require.Equal(t, "linux", pod.NodeSelector["kubernetes.io/os"])
		require.Equal(t, "edge", d.Spec.Template.Annotations["example.com/team"])
		require.Equal(t, "edge", d.Spec.Template.Labels["tier"])
		require.EqualValues(t, 45, *pod.TerminationGracePeriodSeconds)
		require.EqualValues(t, 2000, *pod.SecurityContext.FSGroup, "securityContext is the Pod's")
		require.True(t, *pod.SecurityContext.RunAsNonRoot, "over konductor's Pod security context")
		require.EqualValues(t, 1000, *ctrl.SecurityContext.RunAsUser, "containerSecurityContext without enabled")
		require.Equal(t, "kong-sa", pod.ServiceAccountName)
		sa := find(objs, "ServiceAccount", "kong-sa")
		require.NotNil(t, sa, "deployment.serviceAccount")
		require.Equal(t, "controller", sa.GetAnnotations()["example.com/role"])
		require.True(t, slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "admin-ca" }), "deployment.userDefinedVolumes")
		require.True(t, slices.ContainsFunc(ctrl.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/etc/admin-ca" }), "userDefinedVolumeMounts")

		vwc, _ := requireKICWebhook(t, objs, "kong-konductor", admissionregistrationv1.Fail, 5)
		for _, w := range vwc.Webhooks {
			require.Equal(t, admissionregistrationv1.Exact, *w.MatchPolicy, w.Name)
			require.Equal(t, "owner", w.ObjectSelector.MatchExpressions[0].Key, w.Name)
			require.Equal(t, "kube-system", w.NamespaceSelector.MatchExpressions[0].Values[0], w.Name)
			require.True(t, slices.ContainsFunc(w.MatchConditions, func(c admissionregistrationv1.MatchCondition) bool { return c.Name == "not-system" }), w.Name)
		}
		require.Equal(t, "edge", find(objs, "Service", "kong-konductor-webhook").GetLabels()["team"])
		class := find(objs, "IngressClass", "edge")
		require.NotNil(t, class)
		require.Equal(t, "edge", class.GetAnnotations()["example.com/class"])
		pdb := find(objs, "PodDisruptionBudget", "kong-konductor")
		require.NotNil(t, pdb, "two replicas, minAvailable 1: satisfiable")
		policy, _, _ := unstructured.NestedString(pdb.Object, "spec", "unhealthyPodEvictionPolicy")
		require.Equal(t, "IfHealthyBudget", policy)
		require.NotNil(t, find(objs, "ConfigMap", "kong-extra"), "extraObjects, templated")
	})
	t.Run("kong/ingress", func(t *testing.T) {
		objs := mustTemplate(t, "kong", "kong", kongIngressStyleValues)
		_, args, environ := controllerOf(t, objs, "kong-konductor")
		cfg := parseController(t, args, environ)
		svc, _ := envValue(environ, "CONTROLLER_KONG_ADMIN_SVC")
		require.Equal(t, "kong/kong-gateway-admin", svc, "generateAdminApiService: the gateway release's admin Service, as KIC's chart")
		require.Equal(t, "kong/kong-gateway-proxy", cfg.PublishService)
		require.Equal(t, "debug", cfg.LogLevel)
		require.Equal(t, []string{"apps"}, cfg.WatchNamespaces)
		for _, kv := range environ {
			require.NotContains(t, kv, "ROLE", "gateway.env is Kong's")
		}
		d := deploymentOf(t, objs, "kong-konductor")
		require.Nil(t, d.Spec.Replicas, "the HorizontalPodAutoscaler sets them")
		require.Equal(t, "registry.example.com/konductor:v0.1.0", d.Spec.Template.Spec.Containers[0].Image)
		require.Equal(t, []corev1.LocalObjectReference{{Name: "registry-b"}}, d.Spec.Template.Spec.ImagePullSecrets)
		require.Equal(t, "enabled", d.Spec.Template.Annotations["kuma.io/gateway"])
		hpa := find(objs, "HorizontalPodAutoscaler", "kong-konductor")
		require.NotNil(t, hpa)
		maxReplicas, _, _ := unstructured.NestedInt64(hpa.Object, "spec", "maxReplicas")
		require.EqualValues(t, 4, maxReplicas)
		require.NotNil(t, find(objs, "PodDisruptionBudget", "kong-konductor"), "autoscaling.minReplicas 2, maxUnavailable 50%%: satisfiable")
		sm := find(objs, "ServiceMonitor", "kong-konductor")
		require.NotNil(t, sm)
		endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		require.Equal(t, true, endpoints[0].(map[string]any)["honorLabels"])
		// kong/ingress's defaults where the file is silent.
		objs = mustTemplate(t, "kong", "kong", "controller: {ingressController: {env: {log_level: debug}}}\n")
		_, _, environ = controllerOf(t, objs, "kong-konductor")
		svc, _ = envValue(environ, "CONTROLLER_KONG_ADMIN_SVC")
		require.Equal(t, "kong/kong-gateway-admin", svc)
		// The gateway release's name when it differs from this one's.
		objs = mustTemplate(t, "konductor", "kong", "kicReleaseName: edge\ncontroller: {ingressController: {enabled: true}}\n")
		_, _, environ = controllerOf(t, objs, "konductor")
		svc, _ = envValue(environ, "CONTROLLER_KONG_ADMIN_SVC")
		require.Equal(t, "kong/edge-gateway-admin", svc)
		publish, _ := envValue(environ, "CONTROLLER_PUBLISH_SERVICE")
		require.Equal(t, "kong/edge-gateway-proxy", publish)
	})
	t.Run("konductor's own keys in KIC's forms", func(t *testing.T) {
		objs := mustTemplate(t, "konductor", "kong", `
imagePullSecrets: [registry-c, {name: registry-d}]
containerSecurityContext: {enabled: false}
gatewayDiscovery: {enabled: true, generateAdminApiService: true}
`)
		d := deploymentOf(t, objs, "konductor")
		require.Equal(t, []corev1.LocalObjectReference{{Name: "registry-c"}, {Name: "registry-d"}}, d.Spec.Template.Spec.ImagePullSecrets)
		require.Nil(t, d.Spec.Template.Spec.Containers[0].SecurityContext, "containerSecurityContext.enabled: false (OpenShift)")
		_, _, environ := controllerOf(t, objs, "konductor")
		svc, _ := envValue(environ, "CONTROLLER_KONG_ADMIN_SVC")
		require.Equal(t, "kong/konductor-gateway-admin", svc)
	})
}

// requireKICWebhook checks the webhook of a chart rendered as release "kong" (full name
// fullname) in namespace "kong": what requireChartWebhook checks for release "konductor".
func requireKICWebhook(t *testing.T, objs []*unstructured.Unstructured, fullname string, failurePolicy admissionregistrationv1.FailurePolicyType, timeout int32) (*admissionregistrationv1.ValidatingWebhookConfiguration, string) {
	t.Helper()
	renamed := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		o = o.DeepCopy()
		o.SetName(strings.Replace(o.GetName(), fullname, "konductor", 1))
		if o.GetKind() == "ValidatingWebhookConfiguration" {
			hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
			for _, h := range hooks {
				svc := h.(map[string]any)["clientConfig"].(map[string]any)["service"].(map[string]any)
				svc["name"] = strings.Replace(svc["name"].(string), fullname, "konductor", 1)
				// What an installation chooses beyond config/webhook's: left out of the comparison.
				h.(map[string]any)["matchPolicy"] = "Equivalent"
				delete(h.(map[string]any), "objectSelector")
				if conds, ok := h.(map[string]any)["matchConditions"].([]any); ok {
					conds = slices.DeleteFunc(conds, func(c any) bool { return c.(map[string]any)["name"] != "not-a-helm-release" })
					if len(conds) == 0 {
						delete(h.(map[string]any), "matchConditions")
					} else {
						h.(map[string]any)["matchConditions"] = conds
					}
				}
			}
			require.NoError(t, unstructured.SetNestedSlice(o.Object, hooks, "webhooks"))
		}
		renamed = append(renamed, o)
	}
	_, args, environ := controllerOf(t, renamed, "konductor")
	cfg := parseController(t, args, slices.DeleteFunc(slices.Clone(environ), func(kv string) bool {
		return strings.Contains(kv, "<valueFrom>")
	}))
	requireChartWebhook(t, renamed, cfg, failurePolicy, timeout)
	return webhookConfigurationOf(t, objs, fullname+"-validations"), ""
}

// The default, kong/ingress-style and kong/kong-style values are accepted by a real API server
// (server-side dry run, "restricted" Pod Security Standard, no warning).
func TestChartKICAppliesToAPIServer(t *testing.T) {
	parallel(t)
	apply := chartDryRunApplier(t)
	for name, values := range kicValueSets {
		t.Run(strings.ReplaceAll(name, "/", "-"), func(t *testing.T) { apply(t, values) })
	}
}

// notes renders NOTES.txt (helm install --dry-run=client).
func notes(t *testing.T, values string) string {
	t.Helper()
	out, err := helm(t, "install", "kong", chartDir(), "--namespace", "kong", "--dry-run=client", "--values", valuesFile(t, values))
	require.NoError(t, err)
	_, after, ok := strings.Cut(out, "NOTES:")
	require.True(t, ok, "notes in %s", out)
	return after
}

// The notes name the keys of Kong's that are ignored, and a PodDisruptionBudget left out.
func TestChartKICNotes(t *testing.T) {
	parallel(t)
	n := notes(t, kongKongStyleValues)
	line := ""
	for _, l := range strings.Split(n, "\n") {
		if strings.Contains(l, "ignores them") {
			line = l
		}
	}
	require.NotEmpty(t, line, n)
	for _, k := range []string{"env", "resources", "image.repository", "image.tag", "admin", "proxy (all but proxy.nameOverride)"} {
		require.Contains(t, line, k)
	}
	for _, k := range []string{"replicaCount", "podAnnotations", "ingressController"} {
		require.NotContains(t, line, " "+k+",")
	}
	n = notes(t, kongIngressStyleValues)
	require.Contains(t, n, "ignores them: controller.deployment.kong, gateway.")
	n = notes(t, "")
	require.NotContains(t, n, "ignores them")
	require.NotContains(t, n, "PodDisruptionBudget")
	n = notes(t, "podDisruptionBudget: {enabled: true, minAvailable: 1}\n")
	require.Contains(t, n, "No PodDisruptionBudget was made: with replicaCount 1")
}

// A PodDisruptionBudget only when it lets a Pod be evicted.
func TestChartKICPodDisruptionBudget(t *testing.T) {
	parallel(t)
	for values, want := range map[string]bool{
		"podDisruptionBudget: {enabled: true}":                                                                                true, // maxUnavailable 1
		"podDisruptionBudget: {enabled: true, minAvailable: 1}":                                                               false,
		"podDisruptionBudget: {enabled: true, minAvailable: '50%'}":                                                           false,
		"podDisruptionBudget: {enabled: true, maxUnavailable: 0}":                                                             false,
		"podDisruptionBudget: {enabled: true, maxUnavailable: '0%'}":                                                          false,
		"podDisruptionBudget: {enabled: true, maxUnavailable: '25%'}":                                                         true,
		"{replicaCount: 2, podDisruptionBudget: {enabled: true, minAvailable: 1}}":                                            true,
		"{replicaCount: 2, podDisruptionBudget: {enabled: true, minAvailable: '50%'}}":                                        true,
		"{replicaCount: 2, podDisruptionBudget: {enabled: true, minAvailable: '51%'}}":                                        false,
		"{autoscaling: {enabled: true, minReplicas: 1}, podDisruptionBudget: {enabled: true, minAvailable: 1}}":               false,
		"{autoscaling: {enabled: true, minReplicas: 3}, controller: {podDisruptionBudget: {enabled: true, minAvailable: 2}}}": true,
	} {
		objs := mustTemplate(t, "konductor", "kong", values)
		require.Equal(t, want, find(objs, "PodDisruptionBudget", "konductor") != nil, values)
	}
}

// In a kong/kong values file the top-level image, env, resources and probes are Kong's: the
// controller keeps konductor's defaults for them (konductor.ownDefaults, equal to values.yaml's).
func TestChartKICOwnDefaults(t *testing.T) {
	parallel(t)
	own, _, ownEnv := controllerOf(t, mustTemplate(t, "konductor", "kong", ""), "konductor")
	kic, _, kicEnv := controllerOf(t, mustTemplate(t, "konductor", "kong", "ingressController: {}\nimage: {repository: kong, tag: '3.9'}\nenv: {database: 'off'}\n"), "konductor")
	for _, field := range []string{"image", "imagePullPolicy", "resources", "livenessProbe", "readinessProbe", "securityContext"} {
		require.Equal(t, own[field], kic[field], field)
	}
	require.Equal(t, ownEnv, kicEnv)
}
