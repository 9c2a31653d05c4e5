package integration

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	netv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/konductor/konductor/internal/config"
	"github.com/konductor/konductor/internal/kongemu"
)

// The Helm chart (charts/konductor), rendered by a real helm (hack/helm.sh builds it from the
// Go module proxy; `make test` and .ci/run build it first).

var helmBinary struct {
	once sync.Once
	path string
	err  error
}

// helm runs the helm binary with its own empty config, cache and data folders, and returns
// its stdout.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	helmBinary.once.Do(func() {
		if p := os.Getenv("KONDUCTOR_HELM"); p != "" {
			helmBinary.path = p
			return
		}
		out, err := exec.Command(filepath.Join(repoRoot(), "hack", "helm.sh"), "--cached-only").Output()
		if err != nil {
			helmBinary.err = fmt.Errorf("no helm binary: run `make helm` (hack/helm.sh builds it from the Go module proxy) or set KONDUCTOR_HELM: %w", err)
			return
		}
		helmBinary.path = strings.TrimSpace(string(out))
	})
	require.NoError(t, helmBinary.err)
	home := t.TempDir()
	cmd := exec.Command(helmBinary.path, args...)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home+"/config", "HELM_CACHE_HOME="+home+"/cache", "HELM_DATA_HOME="+home+"/data")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

func chartDir() string { return filepath.Join(repoRoot(), "charts", "konductor") }

// valuesFile writes values (YAML) into a file for helm's --values.
func valuesFile(t *testing.T, values string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(f, []byte(values), 0o600))
	return f
}

// helmTemplate renders the chart as release in namespace, with its CRDs.
func helmTemplate(t *testing.T, release, namespace, values string) ([]*unstructured.Unstructured, error) {
	t.Helper()
	out, err := helm(t, "template", release, chartDir(), "--namespace", namespace, "--include-crds", "--values", valuesFile(t, values))
	if err != nil {
		return nil, err
	}
	return decodeManifests(t, out), nil
}

// decodeManifests reads the objects of a multi-document YAML stream (helm template's output).
func decodeManifests(t *testing.T, out string) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	docs := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(out)))
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		require.NoError(t, err)
		j, err := yaml.YAMLToJSON(doc)
		require.NoError(t, err, "helm template's output:\n%s", doc)
		if string(j) == "null" {
			continue
		}
		u := &unstructured.Unstructured{}
		require.NoError(t, u.UnmarshalJSON(j), "helm template's output:\n%s", doc)
		objs = append(objs, u)
	}
}

func mustTemplate(t *testing.T, release, namespace, values string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := helmTemplate(t, release, namespace, values)
	require.NoError(t, err)
	return objs
}

// chartValueSets are the value sets every chart test renders; "" is the chart's defaults.
var chartValueSets = map[string]string{
	"defaults": "",
	"gateway-discovery": `
gatewayDiscovery:
  enabled: true
  adminService: {namespace: kong-system, name: kong-gateway-admin}
  portNames: [admin-tls, kong-admin-tls]
`,
	"direct-url": `
kongAdminURL: [http://kong-0.kong.svc:8001, http://kong-1.kong.svc:8001]
env: {kong_admin_tls_skip_verify: null, kong-admin-concurrency: 4, KONG_ADMIN_FILTER_TAG: mine}
leaderElection: {enabled: false}
publishService: kong/kong-proxy
ingressClass: internal
ingressClassResource: {default: true}
args: [--log-level=debug]
`,
	"pdb": `
replicaCount: 2
podDisruptionBudget: {enabled: true, minAvailable: 1}
leaderElection: {enabled: true}
`,
	"service-monitor": `
serviceMonitor: {enabled: true, interval: 15s, labels: {release: prometheus}}
`,
	"watch-namespaces": `
watchNamespaces: [team-a, team-b]
publishService: ""
`,
	"webhook": `
admissionWebhook: {enabled: true}
`,
	"webhook-cert-manager": `
admissionWebhook:
  enabled: true
  timeoutSeconds: 5
  annotations: {example.com/team: edge}
  certManager: {enabled: true}
`,
	"webhook-provided": `
admissionWebhook:
  enabled: true
  port: 9443
  failurePolicy: Fail
  namespaceSelector: {matchLabels: {konductor: checked}}
  certificate: {provided: true, secretName: my-webhook-tls, caBundle: "` + providedCABundle + `"}
`,
}

// providedCABundle stands for the PEM of a CA a user gives the chart.
const providedCABundle = "-----BEGIN CERTIFICATE-----\\nMIIB\\n-----END CERTIFICATE-----\\n"

func TestChartLint(t *testing.T) {
	parallel(t)
	for name, values := range chartValueSets {
		t.Run(name, func(t *testing.T) {
			out, err := helm(t, "lint", "--strict", chartDir(), "--values", valuesFile(t, values))
			require.NoError(t, err)
			require.Contains(t, out, "0 chart(s) failed")
		})
	}
}

// Values the chart must refuse, each with the reason it gives.
func TestChartRefusesBadValues(t *testing.T) {
	parallel(t)
	for values, reason := range map[string]string{
		"podDisruptionBudget: {enabled: true, minAvailable: 1, maxUnavailable: 1}":                                          "not both",
		"gatewayDiscovery: {enabled: true, adminService: {name: ''}}":                                                       "gatewayDiscovery.adminService.name is required",
		"gatewayDiscovery: {enabled: false}":                                                                                "kongAdminURL is required when gatewayDiscovery.enabled is false",
		"leaderElection: {enabled: 'yes'}":                                                                                  "leaderElection/enabled",
		"notAValue: {env: {kong_admin_url: http://x}}":                                                                      "additional properties 'notAValue' not allowed",
		"ingressController: {gatewayDiscovery: {enabled: true, generateAdminApiService: true, adminApiService: {name: x}}}": "must not be provided at the same time",
		"controller: {ingressController: {konnect: {enabled: true}}}":                                                       "konnect.controlPlaneID is required when konnect.enabled",
		"konnect: {enabled: true, controlPlaneId: cp}":                                                                      "additional properties 'controlPlaneId' not allowed",
		"ingressController: {adminApi: {tls: {client: {enabled: true}}}}":                                                   "set certProvided: true and secretName",
		"imagePullSecrets: [{}]":                                                                                            "imagePullSecrets",
		"env: {kong_admin_token: {secretKeyRef: {name: s}}}":                                                                "env/kong_admin_token",
		"admissionWebhook: {enabled: true, certificate: {provided: true}}":                                                  "admissionWebhook.certificate.secretName is required",
		"admissionWebhook: {enabled: true, certificate: {provided: true, secretName: s}, certManager: {enabled: true}}":     "not both",
		"admissionWebhook: {enabled: true, failurePolicy: Never}":                                                           "admissionWebhook/failurePolicy",
	} {
		_, err := helmTemplate(t, "konductor", "kong", values)
		require.ErrorContains(t, err, reason, "values %s", values)
	}
}

// controllerOf returns the Deployment's controller container, its args after "run" and its
// environment as NAME=value (variables from valueFrom have the value "<valueFrom>").
func controllerOf(t *testing.T, objs []*unstructured.Unstructured, name string) (map[string]any, []string, []string) {
	t.Helper()
	dep := find(objs, "Deployment", name)
	require.NotNil(t, dep, "Deployment %s", name)
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	require.Len(t, containers, 1)
	ctrl := containers[0].(map[string]any)
	require.Equal(t, "controller", ctrl["name"])
	args, _, _ := unstructured.NestedStringSlice(ctrl, "args")
	require.NotEmpty(t, args)
	require.Equal(t, "run", args[0])
	envs, _, _ := unstructured.NestedSlice(ctrl, "env")
	var environ []string
	for _, e := range envs {
		m := e.(map[string]any)
		v, ok := m["value"].(string)
		if !ok {
			require.Contains(t, m, "valueFrom", "env %v", m)
			v = "<valueFrom>"
		}
		environ = append(environ, m["name"].(string)+"="+v)
	}
	return ctrl, args[1:], environ
}

// envValue is the value of variable name in environ, and whether it is set.
func envValue(environ []string, name string) (string, bool) {
	for _, kv := range environ {
		if k, v, _ := strings.Cut(kv, "="); k == name {
			return v, true
		}
	}
	return "", false
}

// The gateway discovery flags, which this konductor may not have yet.
var discoveryVars = []string{"CONTROLLER_KONG_ADMIN_SVC", "CONTROLLER_KONG_ADMIN_SVC_PORT_NAMES"}

// parseController parses the controller's args and CONTROLLER_* environment as the binary
// does (an unknown flag or variable is an error). When this konductor does not know the
// gateway discovery flags yet, they are left out of the parse; the caller checks their strings.
func parseController(t *testing.T, args, environ []string) *config.Config {
	t.Helper()
	for _, kv := range environ {
		if strings.HasPrefix(kv, config.EnvPrefix) {
			require.NotContains(t, kv, "<valueFrom>", "a value set whose settings can be parsed")
		}
	}
	cfg, err := config.ParseEnviron(args, environ)
	if err != nil && strings.Contains(err.Error(), "CONTROLLER_KONG_ADMIN_SVC names no konductor flag") {
		t.Logf("this konductor has no --kong-admin-svc yet; parsing without %v", discoveryVars)
		environ = slices.DeleteFunc(slices.Clone(environ), func(kv string) bool {
			k, _, _ := strings.Cut(kv, "=")
			return slices.Contains(discoveryVars, k)
		})
		cfg, err = config.ParseEnviron(args, environ)
	}
	require.NoError(t, err, "args %v, environment %v", args, environ)
	return cfg
}

// What each value set renders: the controller's settings as konductor parses them, the
// Deployment's fixed parts, and the optional objects.
func TestChartRendersController(t *testing.T) {
	parallel(t)
	for name, values := range chartValueSets {
		t.Run(name, func(t *testing.T) {
			objs := mustTemplate(t, "konductor", "kong", values)
			ctrl, args, environ := controllerOf(t, objs, "konductor")
			cfg := parseController(t, args, environ)
			_, leaderElectSet := envValue(environ, "CONTROLLER_LEADER_ELECT")
			checkChartPod(t, objs, ctrl, cfg)

			switch name {
			case "defaults":
				// Beside a kong/kong release named "kong": every Pod behind its admin Service
				// (discovery, as KIC's kong/ingress: a DB-less Kong's Service has no ready
				// endpoint before its first configuration), TLS, self-signed.
				_, direct := envValue(environ, "CONTROLLER_KONG_ADMIN_URL")
				require.False(t, direct, "no --kong-admin-url with gateway discovery")
				require.Equal(t, []types.NamespacedName{{Namespace: "kong", Name: "kong-kong-admin"}}, cfg.KongAdminSvc)
				require.True(t, cfg.KongAdminTLSSkipVerify)
				require.Equal(t, "kong", cfg.IngressClass)
				require.Equal(t, "kong/kong-kong-proxy", cfg.PublishService)
				require.Empty(t, cfg.WatchNamespaces)
				require.False(t, leaderElectSet, "leader election is left to the controller")
				require.NotContains(t, strings.Join(args, " "), "--leader-elect")
				require.Nil(t, find(objs, "PodDisruptionBudget", "konductor"))
				require.Nil(t, find(objs, "ServiceMonitor", "konductor"))
				require.Nil(t, find(objs, "Service", "konductor-metrics"))
				// The admission webhook is on by default, as in KIC's charts; the Lease is KIC's chart's.
				require.Equal(t, ":8080", cfg.AdmissionWebhook.ListenAddr)
				_, secretName := requireChartWebhook(t, objs, cfg, admissionregistrationv1.Ignore, 10)
				require.NotNil(t, find(objs, "Secret", secretName), "the chart's certificate")
				require.Equal(t, "kong-ingress-controller-leader-kong", cfg.ElectionID)
				class := find(objs, "IngressClass", "kong")
				require.NotNil(t, class)
				require.Empty(t, class.GetAnnotations())
			case "gateway-discovery":
				svc, _ := envValue(environ, "CONTROLLER_KONG_ADMIN_SVC")
				require.Equal(t, "kong-system/kong-gateway-admin", svc)
				ports, _ := envValue(environ, "CONTROLLER_KONG_ADMIN_SVC_PORT_NAMES")
				require.Equal(t, "admin-tls,kong-admin-tls", ports)
				_, direct := envValue(environ, "CONTROLLER_KONG_ADMIN_URL")
				require.False(t, direct, "no --kong-admin-url with gateway discovery")
				require.False(t, leaderElectSet)
			case "direct-url":
				require.Equal(t, []string{"http://kong-0.kong.svc:8001", "http://kong-1.kong.svc:8001"}, cfg.KongAdminURLs)
				require.False(t, cfg.KongAdminTLSSkipVerify, "env.kong_admin_tls_skip_verify: null removes the default")
				require.Equal(t, 4, cfg.KongAdminConcurrency, "env keys with dashes")
				require.Equal(t, []string{"mine"}, cfg.KongAdminFilterTags, "env keys in upper case")
				require.False(t, cfg.LeaderElect)
				require.Equal(t, "kong/kong-proxy", cfg.PublishService)
				require.Equal(t, "internal", cfg.IngressClass)
				require.Equal(t, "kong-ingress-controller-leader-internal", cfg.ElectionID, "KIC's chart's Lease name for the class")
				require.Equal(t, "debug", cfg.LogLevel)
				class := find(objs, "IngressClass", "internal")
				require.NotNil(t, class)
				require.Equal(t, "true", class.GetAnnotations()["ingressclass.kubernetes.io/is-default-class"])
			case "pdb":
				require.True(t, cfg.LeaderElect)
				require.True(t, leaderElectSet)
				pdb := find(objs, "PodDisruptionBudget", "konductor")
				require.NotNil(t, pdb)
				minAvailable, _, _ := unstructured.NestedInt64(pdb.Object, "spec", "minAvailable")
				require.EqualValues(t, 1, minAvailable)
				selects, _, _ := unstructured.NestedStringMap(pdb.Object, "spec", "selector", "matchLabels")
				requireSelects(t, selects, find(objs, "Deployment", "konductor"))
			case "service-monitor":
				svc := find(objs, "Service", "konductor-metrics")
				require.NotNil(t, svc)
				selects, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
				requireSelects(t, selects, find(objs, "Deployment", "konductor"))
				ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
				require.Len(t, ports, 1)
				require.Equal(t, "metrics", ports[0].(map[string]any)["targetPort"])
				sm := find(objs, "ServiceMonitor", "konductor")
				require.NotNil(t, sm)
				require.Equal(t, "prometheus", sm.GetLabels()["release"])
				smSelects, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
				for k, v := range smSelects {
					require.Equal(t, v, svc.GetLabels()[k], "the ServiceMonitor selects the metrics Service (%s)", k)
				}
				endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
				require.Len(t, endpoints, 1)
				ep := endpoints[0].(map[string]any)
				require.Equal(t, "metrics", ep["port"])
				require.Equal(t, "/metrics", ep["path"])
				require.Equal(t, "15s", ep["interval"])
			case "watch-namespaces":
				require.Equal(t, []string{"team-a", "team-b"}, cfg.WatchNamespaces)
				require.Empty(t, cfg.PublishService)
			case "webhook":
				// The chart makes the CA and the certificate, signed for the Service's name.
				require.Equal(t, ":8080", cfg.AdmissionWebhook.ListenAddr)
				vwc, secretName := requireChartWebhook(t, objs, cfg, admissionregistrationv1.Ignore, 10)
				require.Equal(t, "konductor-webhook-cert", secretName)
				secret := find(objs, "Secret", secretName)
				require.NotNil(t, secret, "the chart's certificate Secret")
				require.Equal(t, "kubernetes.io/tls", secret.Object["type"])
				data, _, _ := unstructured.NestedStringMap(secret.Object, "data")
				pemOf := func(key string) []byte {
					b, err := base64.StdEncoding.DecodeString(data[key])
					require.NoError(t, err, key)
					return b
				}
				_, err := tls.X509KeyPair(pemOf("tls.crt"), pemOf("tls.key"))
				require.NoError(t, err, "tls.crt and tls.key are a pair")
				for _, w := range vwc.Webhooks {
					require.Equal(t, pemOf("ca.crt"), w.ClientConfig.CABundle, w.Name)
				}
				requireSignedFor(t, pemOf("tls.crt"), vwc.Webhooks[0].ClientConfig.CABundle, "konductor-webhook.kong.svc")
				require.Empty(t, vwc.Annotations)
			case "webhook-cert-manager":
				// cert-manager issues the certificate into the mounted Secret and injects its CA.
				vwc, secretName := requireChartWebhook(t, objs, cfg, admissionregistrationv1.Ignore, 5)
				require.Nil(t, find(objs, "Secret", secretName), "cert-manager writes the Secret")
				cert := find(objs, "Certificate", "konductor-webhook")
				require.NotNil(t, cert)
				require.Equal(t, "cert-manager.io/v1", cert.GetAPIVersion())
				certSecret, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
				require.Equal(t, secretName, certSecret)
				dnsNames, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
				require.Equal(t, []string{"konductor-webhook.kong.svc"}, dnsNames)
				issuer, _, _ := unstructured.NestedStringMap(cert.Object, "spec", "issuerRef")
				require.Equal(t, "Issuer", issuer["kind"])
				selfSigned := find(objs, "Issuer", issuer["name"])
				require.NotNil(t, selfSigned, "the chart's Issuer %s", issuer["name"])
				require.Contains(t, selfSigned.Object["spec"], "selfSigned")
				require.Equal(t, "kong/konductor-webhook", vwc.Annotations["cert-manager.io/inject-ca-from"])
				require.Equal(t, "edge", vwc.Annotations["example.com/team"])
				for _, w := range vwc.Webhooks {
					require.Empty(t, w.ClientConfig.CABundle, "cert-manager fills it")
				}
			case "webhook-provided":
				// The user's Secret and CA; the chart makes no certificate.
				require.Equal(t, ":9443", cfg.AdmissionWebhook.ListenAddr)
				vwc, secretName := requireChartWebhook(t, objs, cfg, admissionregistrationv1.Fail, 10)
				require.Equal(t, "my-webhook-tls", secretName)
				for _, o := range objs {
					require.NotEqual(t, "Secret", o.GetKind(), "no Secret made: %s", o.GetName())
					require.NotEqual(t, "cert-manager.io", o.GroupVersionKind().Group, "no cert-manager object: %s", o.GetName())
				}
				for _, w := range vwc.Webhooks {
					require.Equal(t, "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", string(w.ClientConfig.CABundle), w.Name)
					require.Equal(t, map[string]string{"konductor": "checked"}, w.NamespaceSelector.MatchLabels, w.Name)
				}
			default:
				t.Fatalf("no assertions for value set %s", name)
			}
		})
	}
}

// requireSelects checks that selector matches the Deployment's Pods.
func requireSelects(t *testing.T, selector map[string]string, dep *unstructured.Unstructured) {
	t.Helper()
	require.NotEmpty(t, selector)
	podLabels, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "template", "metadata", "labels")
	for k, v := range selector {
		require.Equal(t, v, podLabels[k], "selector %s=%s against the Pod labels %v", k, v, podLabels)
	}
}

// checkChartPod holds what every value set must keep: the ports the controller listens on,
// and the Pod as config/manager has it (ports, probes, resources, security contexts, the
// downward API variables), so that the two ways to install do not drift apart.
func checkChartPod(t *testing.T, objs []*unstructured.Unstructured, ctrl map[string]any, cfg *config.Config) {
	t.Helper()
	require.Equal(t, ":10254", cfg.HealthProbeBindAddress)
	require.Equal(t, ":10255", cfg.MetricsBindAddress)
	dep := find(objs, "Deployment", "konductor")
	manager := find(render(t, "manager"), "Deployment", "konductor")
	require.NotNil(t, manager)
	managerCtrl, _, _ := unstructured.NestedSlice(manager.Object, "spec", "template", "spec", "containers")
	for _, field := range []string{"ports", "livenessProbe", "readinessProbe", "resources", "securityContext"} {
		got := ctrl[field]
		if field == "ports" { // the admission webhook's is config/webhook's, checked with it
			got = slices.DeleteFunc(slices.Clone(got.([]any)), func(p any) bool { return p.(map[string]any)["name"] == "webhook" })
		}
		require.Equal(t, managerCtrl[0].(map[string]any)[field], got, "the container's %s, as in config/manager", field)
	}
	for _, field := range []string{"securityContext", "terminationGracePeriodSeconds"} {
		want, _, _ := unstructured.NestedFieldNoCopy(manager.Object, "spec", "template", "spec", field)
		got, _, _ := unstructured.NestedFieldNoCopy(dep.Object, "spec", "template", "spec", field)
		require.Equal(t, want, got, "the Pod's %s, as in config/manager", field)
	}
	downward := managerCtrl[0].(map[string]any)["env"].([]any)
	env := ctrl["env"].([]any)
	require.Equal(t, downward, env[:len(downward)], "POD_NAME, POD_NAMESPACE and POD_UID, as in config/manager")
	sa, _, _ := unstructured.NestedString(dep.Object, "spec", "template", "spec", "serviceAccountName")
	require.NotNil(t, find(objs, "ServiceAccount", sa), "the Pod's ServiceAccount %s is in the chart", sa)
	selects, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "selector", "matchLabels")
	requireSelects(t, selects, dep)
}

// The chart's copies of config/ (CRDs, RBAC rules) are byte for byte the originals.
func TestChartCopiesOfConfigAreCurrent(t *testing.T) {
	parallel(t)
	for src, dst := range map[string]string{
		filepath.Join("config", "crd"):  filepath.Join("charts", "konductor", "crds"),
		filepath.Join("config", "rbac"): filepath.Join("charts", "konductor", "files", "rbac"),
	} {
		copies, err := filepath.Glob(filepath.Join(repoRoot(), dst, "*.yaml"))
		require.NoError(t, err)
		require.NotEmpty(t, copies, dst)
		for _, c := range copies {
			want, err := os.ReadFile(filepath.Join(repoRoot(), src, filepath.Base(c)))
			require.NoError(t, err, "%s has no original in %s: run make chart-sync", c, src)
			got, err := os.ReadFile(c)
			require.NoError(t, err)
			require.Equal(t, string(want), string(got), "%s differs from %s: run make chart-sync", c, src)
		}
	}
	crds := render(t, "crd")
	copies, _ := filepath.Glob(filepath.Join(chartDir(), "crds", "*.yaml"))
	require.Len(t, copies, len(crds), "every CRD of config/crd is in the chart: run make chart-sync")
}

// rulesOf decodes the rules of a rendered ClusterRole or Role.
func rulesOf(t *testing.T, o *unstructured.Unstructured) []rbacv1.PolicyRule {
	t.Helper()
	require.NotNil(t, o)
	var typed struct {
		Rules []rbacv1.PolicyRule `json:"rules"`
	}
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &typed))
	return typed.Rules
}

// grants flattens rules into group/resource -> sorted verbs.
func grants(rules []rbacv1.PolicyRule) map[string][]string {
	out := map[string][]string{}
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				out[g+"/"+res] = append(out[g+"/"+res], r.Verbs...)
			}
		}
	}
	for k := range out {
		slices.Sort(out[k])
	}
	return out
}

// The chart grants what config/rbac grants, bound to its ServiceAccount: cluster-wide by
// default; with watchNamespaces, the namespaced kinds through RoleBindings in those namespaces
// and the cluster-scoped ones (as the API server's discovery says) cluster-wide.
func TestChartRBACMatchesConfig(t *testing.T) {
	parallel(t)
	cluster, lease := rbacRules(t)

	objs := mustTemplate(t, "konductor", "kong", chartValueSets["defaults"])
	require.Equal(t, cluster, rulesOf(t, find(objs, "ClusterRole", "konductor")))
	require.Equal(t, lease, rulesOf(t, find(objs, "Role", "konductor-leader-election")))
	requireBinding(t, find(objs, "ClusterRoleBinding", "konductor"), "ClusterRole", "konductor", "kong", "konductor")
	requireBinding(t, find(objs, "RoleBinding", "konductor-leader-election"), "Role", "konductor-leader-election", "kong", "konductor")
	require.Equal(t, "kong", find(objs, "Role", "konductor-leader-election").GetNamespace())

	objs = mustTemplate(t, "konductor", "kong", chartValueSets["watch-namespaces"])
	require.Nil(t, find(objs, "ClusterRoleBinding", "konductor"), "no cluster-wide grant of namespaced kinds")
	require.Equal(t, cluster, rulesOf(t, find(objs, "ClusterRole", "konductor")))
	for _, ns := range []string{"team-a", "team-b"} {
		var rb *unstructured.Unstructured
		for _, o := range objs {
			if o.GetKind() == "RoleBinding" && o.GetName() == "konductor" && o.GetNamespace() == ns {
				rb = o
			}
		}
		requireBinding(t, rb, "ClusterRole", "konductor", "kong", "konductor")
	}
	requireBinding(t, find(objs, "ClusterRoleBinding", "konductor-cluster-scoped"), "ClusterRole", "konductor-cluster-scoped", "kong", "konductor")

	namespaced := namespacedResources(t)
	want := map[string][]string{}
	for gr, verbs := range grants(cluster) {
		isNamespaced, known := namespaced[gr]
		require.True(t, known, "the API server serves %s", gr)
		if !isNamespaced {
			want[gr] = verbs
		}
	}
	require.NotEmpty(t, want)
	require.Equal(t, want, grants(rulesOf(t, find(objs, "ClusterRole", "konductor-cluster-scoped"))),
		"exactly the cluster-scoped resources of config/rbac are granted cluster-wide (konductor.clusterScopedResources in the chart)")

	own := find(objs, "Role", "konductor-events-services")
	require.NotNil(t, own)
	require.Equal(t, "kong", own.GetNamespace())
	ownWant := map[string][]string{}
	for gr, verbs := range grants(cluster) {
		if strings.HasSuffix(gr, "/events") || gr == "/services" {
			ownWant[gr] = verbs
		}
	}
	require.Equal(t, ownWant, grants(rulesOf(t, own)), "the release namespace: the Pod's events and the publish Service")
}

func requireBinding(t *testing.T, b *unstructured.Unstructured, roleKind, role, saNamespace, sa string) {
	t.Helper()
	require.NotNil(t, b, "binding to %s %s", roleKind, role)
	var typed rbacv1.RoleBinding // a ClusterRoleBinding has the same fields
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(b.Object, &typed))
	require.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: roleKind, Name: role}, typed.RoleRef)
	require.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: saNamespace}}, typed.Subjects)
}

// namespacedResources maps group/resource (subresources too) to whether it is namespaced,
// from the API server's discovery.
func namespacedResources(t *testing.T) map[string]bool {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(adminConfig)
	require.NoError(t, err)
	_, lists, err := dc.ServerGroupsAndResources()
	require.NoError(t, err)
	out := map[string]bool{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		require.NoError(t, err)
		for _, r := range l.APIResources {
			out[gv.Group+"/"+r.Name] = r.Namespaced
		}
	}
	return out
}

// serviceMonitorCRD is a minimal stand-in for Prometheus Operator's ServiceMonitor CRD: the
// fields the chart sets, with their real types (monitoring.coreos.com/v1), and nothing else,
// so that a misspelt or misplaced field is refused.
func serviceMonitorCRD() *apiextensionsv1.CustomResourceDefinition {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	strMap := apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &str}}
	duration := apiextensionsv1.JSONSchemaProps{Type: "string",
		Pattern: `^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`}
	obj := func(props map[string]apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props}
	}
	anyObjects := apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object", XPreserveUnknownFields: ptrTo(true)}}}
	spec := obj(map[string]apiextensionsv1.JSONSchemaProps{
		"targetLabels":      {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &str}},
		"selector":          obj(map[string]apiextensionsv1.JSONSchemaProps{"matchLabels": strMap}),
		"namespaceSelector": obj(map[string]apiextensionsv1.JSONSchemaProps{"matchNames": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &str}}}),
		"endpoints": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: ptrTo(obj(map[string]apiextensionsv1.JSONSchemaProps{
			"port": str, "path": str, "interval": duration, "scrapeTimeout": duration, "honorLabels": {Type: "boolean"},
			"relabelings": anyObjects, "metricRelabelings": anyObjects,
			"scheme": {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"http"`)}, {Raw: []byte(`"https"`)}}},
		}))}},
	})
	spec.Required = []string{"selector"}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "servicemonitors.monitoring.coreos.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "monitoring.coreos.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "ServiceMonitor", ListKind: "ServiceMonitorList", Plural: "servicemonitors", Singular: "servicemonitor"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: ptrTo(obj(map[string]apiextensionsv1.JSONSchemaProps{
					"apiVersion": str, "kind": str, "metadata": {Type: "object"}, "spec": spec,
				}))}}},
		},
	}
}

func ptrTo[T any](v T) *T { return &v }

// installServiceMonitorCRD installs serviceMonitorCRD once and waits until it is served.
func installServiceMonitorCRD(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	c, err := client.New(adminConfig, client.Options{})
	require.NoError(t, err)
	crd := serviceMonitorCRD()
	if err := c.Create(ctx, crd); !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		var got apiextensionsv1.CustomResourceDefinition
		if c.Get(ctx, client.ObjectKeyFromObject(crd), &got) != nil {
			return false
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true
			}
		}
		return false
	}, time.Minute, 100*time.Millisecond, "the ServiceMonitor CRD is established")
}

// Every object of every value set is accepted by a real kube-apiserver (server-side apply,
// dry run), with no warning: the release namespace enforces the "restricted" Pod Security
// Standard. The ServiceMonitor goes against a minimal CRD of its own (serviceMonitorCRD).
func TestChartAppliesToAPIServer(t *testing.T) {
	parallel(t)
	apply := chartDryRunApplier(t)
	for name, values := range chartValueSets {
		t.Run(name, func(t *testing.T) { apply(t, values) })
	}
}

// chartDryRunApplier returns a function that renders the chart with values as a unique release
// in a namespace that enforces the "restricted" Pod Security Standard, and applies every object
// to the API server (server-side, dry run), requiring no error and no warning. Subtests that
// use it must not run in parallel (they share the warning collector).
func chartDryRunApplier(t *testing.T) func(t *testing.T, values string) []*unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	installServiceMonitorCRD(t)
	warnings := &warningCollector{}
	cfg := rest.CopyConfig(adminConfig)
	cfg.WarningHandlerWithContext = warnings
	c, err := client.New(cfg, client.Options{})
	require.NoError(t, err)
	createNamespace := func(t *testing.T, name string, labels map[string]string) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
		if err := c.Create(ctx, ns); !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err, "namespace %s", name)
		}
	}
	return func(t *testing.T, values string) []*unstructured.Unstructured {
		t.Helper()
		release := newNamespace(t) // a unique name
		createNamespace(t, release+"-kong", map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
		objs := mustTemplate(t, release, release+"-kong", values)
		for _, o := range objs {
			if ns := o.GetNamespace(); ns != "" {
				createNamespace(t, ns, nil) // watchNamespaces
			}
		}
		warnings.take()
		for _, o := range objs {
			if o.GroupVersionKind().Group == "cert-manager.io" { // cert-manager's CRDs are not installed here
				continue
			}
			err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()),
				client.DryRunAll, client.ForceOwnership, client.FieldOwner("konductor-chart-test"))
			require.NoError(t, err, "server-side dry-run apply of %s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
			require.Empty(t, warnings.take(), "warnings for %s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
		}
		return objs
	}
}

// The chart's RBAC with watchNamespaces is enough for a real controller: holding only what the
// chart grants its ServiceAccount (RoleBindings in the watched namespace, the cluster-scoped
// kinds cluster-wide, events and the publish Service in the release namespace, the Lease
// there), it becomes leader, syncs, writes Events and publishes the proxy Service's address.
func TestChartRBACWatchNamespacesIsEnough(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	watched, release := newNamespace(t), newNamespace(t)
	objs := app(watched, "echo", "echo.example.com")
	objs = append(objs, app(watched, "broken", "broken.example.com")...)
	objs[len(objs)-1].SetAnnotations(map[string]string{"konghq.com/plugins": "no-such-plugin"})
	proxy := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: release, Name: "kong-proxy"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "proxy", Port: 80}}}}
	createAll(t, append(objs, proxy))
	kong := startEmulator(t, kongemu.DBLess)

	rendered := mustTemplate(t, "chart-"+release, release, fmt.Sprintf("watchNamespaces: [%s]\npublishService: kong-proxy\n", watched))
	var sa string
	for _, o := range rendered {
		switch o.GetKind() {
		case "ServiceAccount":
			sa = o.GetName()
		case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			o := o.DeepCopy()
			require.NoError(t, admin.Create(ctx, o), "creating %s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
			if o.GetNamespace() == "" {
				t.Cleanup(func() { _ = admin.Delete(context.Background(), o) })
			}
		}
	}
	require.NotEmpty(t, sa)
	user, err := env.AddUser(envtest.User{Name: "system:serviceaccount:" + release + ":" + sa}, adminConfig)
	require.NoError(t, err)
	r := startReplica(t, replicaSpec{name: "chart-rbac", namespace: watched, gateways: []string{kong.URL},
		environ:    []string{"POD_NAME=konductor-0", "POD_NAMESPACE=" + release}, // the downward API's
		restConfig: user.Config(), args: []string{"--leader-elect=true", "--election-namespace=" + release,
			"--publish-service=" + release + "/kong-proxy",
			"--election-lease-duration=4s", "--election-renew-deadline=3s", "--election-retry-period=500ms"}})
	r.waitFirstSync(t, time.Minute) // only the leader syncs
	var lease coordinationv1.Lease
	require.NoError(t, admin.Get(ctx, client.ObjectKey{Namespace: release, Name: config.DefaultElectionID}, &lease),
		"the Lease is in the release namespace")
	for _, word := range []string{"forbid", "Forbidden"} {
		require.False(t, r.logs.contains(word), "no permission was missing:\n%s", r.logs)
	}
	var names []string
	for _, rt := range kong.Entities("routes") {
		names = append(names, fmt.Sprint(rt["name"]))
	}
	require.Contains(t, names, routeName(watched, "echo"))

	require.NoError(t, admin.Get(ctx, client.ObjectKeyFromObject(proxy), proxy))
	require.NotEmpty(t, proxy.Spec.ClusterIP)
	require.Eventually(t, func() bool {
		var ing netv1.Ingress
		err := admin.Get(ctx, client.ObjectKey{Namespace: watched, Name: "echo"}, &ing)
		lb := ing.Status.LoadBalancer.Ingress
		return err == nil && len(lb) == 1 && lb[0].IP == proxy.Spec.ClusterIP
	}, 30*time.Second, 50*time.Millisecond, "the controller read the proxy Service in the release namespace and published its address")
	require.Eventually(t, func() bool {
		var evs eventsv1.EventList
		err := admin.List(ctx, &evs, client.InNamespace(watched))
		return err == nil && slices.ContainsFunc(evs.Items, func(e eventsv1.Event) bool {
			return e.Regarding.Name == "broken" && e.Reason == "KongConfigurationTranslationFailed"
		})
	}, 30*time.Second, 100*time.Millisecond, "the controller wrote the Event about the broken Ingress")
}
