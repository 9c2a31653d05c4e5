package integration

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/konductor/konductor/internal/config"
)

// webhookConfigurationOf converts the ValidatingWebhookConfiguration name of objs.
func webhookConfigurationOf(t *testing.T, objs []*unstructured.Unstructured, name string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	u := find(objs, "ValidatingWebhookConfiguration", name)
	require.NotNil(t, u, "ValidatingWebhookConfiguration %s", name)
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &vwc))
	return &vwc
}

// requireServesWebhook checks that Deployment dep's controller, with settings cfg, serves the
// admission webhook on its container port named "webhook" and reads its certificate from a
// mounted Secret; it returns that Secret's name.
func requireServesWebhook(t *testing.T, dep *unstructured.Unstructured, cfg *config.Config) string {
	t.Helper()
	var d appsv1.Deployment
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(dep.Object, &d))
	var ctrl corev1.Container
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "controller" {
			ctrl = c
		}
	}
	require.True(t, cfg.AdmissionWebhook.Enabled())
	_, port, err := net.SplitHostPort(cfg.AdmissionWebhook.ListenAddr)
	require.NoError(t, err)
	named := false
	for _, p := range ctrl.Ports {
		named = named || (p.Name == "webhook" && fmt.Sprint(p.ContainerPort) == port)
	}
	require.True(t, named, "container port webhook is the listen port %s", port)
	require.Empty(t, cfg.AdmissionWebhook.Cert, "the certificate is read from files")
	require.Equal(t, filepath.Dir(cfg.AdmissionWebhook.CertFile), filepath.Dir(cfg.AdmissionWebhook.KeyFile))
	volume := ""
	for _, m := range ctrl.VolumeMounts {
		if m.MountPath == filepath.Dir(cfg.AdmissionWebhook.CertFile) {
			volume = m.Name
		}
	}
	require.NotEmpty(t, volume, "a volume is mounted where the controller reads the certificate (%s)", cfg.AdmissionWebhook.CertFile)
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == volume {
			require.NotNil(t, v.Secret, "volume %s is a Secret", volume)
			return v.Secret.SecretName
		}
	}
	t.Fatalf("no volume %s", volume)
	return ""
}

// withoutClientConfig is vwc's webhooks with what an installation chooses (where to call, with
// which CA, how long, how to fail, which namespaces) left out: the rest must be config/webhook's.
func withoutClientConfig(vwc *admissionregistrationv1.ValidatingWebhookConfiguration) []admissionregistrationv1.ValidatingWebhook {
	var out []admissionregistrationv1.ValidatingWebhook
	for _, w := range vwc.Webhooks {
		w.ClientConfig, w.FailurePolicy, w.TimeoutSeconds, w.NamespaceSelector = admissionregistrationv1.WebhookClientConfig{}, nil, nil, nil
		out = append(out, w)
	}
	return out
}

// requireChartWebhook checks the webhook of a chart rendered as release "konductor" in
// namespace "kong": the controller serves it, the Service reaches it, the webhook
// configuration calls that Service on "/" with config/webhook's rules, failurePolicy and
// timeout as given. It returns the configuration and the certificate Secret's name.
func requireChartWebhook(t *testing.T, objs []*unstructured.Unstructured, cfg *config.Config, failurePolicy admissionregistrationv1.FailurePolicyType, timeout int32) (*admissionregistrationv1.ValidatingWebhookConfiguration, string) {
	t.Helper()
	dep := find(objs, "Deployment", "konductor")
	secret := requireServesWebhook(t, dep, cfg)

	svc := find(objs, "Service", "konductor-webhook")
	require.NotNil(t, svc, "the webhook Service")
	selects, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
	requireSelects(t, selects, dep)
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	require.Len(t, ports, 1)
	require.Equal(t, "webhook", ports[0].(map[string]any)["targetPort"])
	require.EqualValues(t, 443, ports[0].(map[string]any)["port"])

	vwc := webhookConfigurationOf(t, objs, "konductor-validations")
	for _, w := range vwc.Webhooks {
		require.Equal(t, "konductor-webhook", w.ClientConfig.Service.Name, w.Name)
		require.Equal(t, "kong", w.ClientConfig.Service.Namespace, w.Name)
		require.Equal(t, "/", *w.ClientConfig.Service.Path, w.Name)
		require.Equal(t, failurePolicy, *w.FailurePolicy, w.Name)
		require.Equal(t, timeout, *w.TimeoutSeconds, w.Name)
	}
	manifests := webhookConfigurationOf(t, render(t, filepath.Join("..", "test", "integration", "testdata", "webhook-overlay")), "konductor-validations")
	require.Equal(t, withoutClientConfig(manifests), withoutClientConfig(vwc), "the chart's webhooks are config/webhook's")
	return vwc, secret
}

// requireSignedFor checks that PEM certificate certPEM is signed by PEM CA caPEM for dnsName.
func requireSignedFor(t *testing.T, certPEM, caPEM []byte, dnsName string) {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	require.NotNil(t, block, "tls.crt is PEM")
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(caPEM), "the caBundle is PEM")
	_, err = cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: dnsName, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	require.NoError(t, err)
}
