package integration

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	netv1 "k8s.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/config"
	"github.com/konductor/konductor/internal/kongemu"
)

// webhookFiles writes a serving certificate for 127.0.0.1 and its key as PEM files; it
// returns their paths and the CA that signed it (PEM), the webhook configuration's caBundle.
func webhookFiles(t *testing.T) (certFile, keyFile string, caBundle []byte) {
	t.Helper()
	cert, caPEM := servingCert(t, nil, []net.IP{net.ParseIP("127.0.0.1")})
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	require.NoError(t, err)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600))
	return certFile, keyFile, caPEM
}

// registerWebhook makes the API server send the writes of Ingresses and KongPlugins in ns
// (only: other tests share the API server) to url, with failurePolicy Ignore as KIC's chart
// and config/webhook have it.
func registerWebhook(t *testing.T, ns, url string, caBundle []byte) {
	t.Helper()
	ignore := admissionregistrationv1.Ignore
	none := admissionregistrationv1.SideEffectClassNone
	equivalent := admissionregistrationv1.Equivalent
	timeout := int32(10)
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "konductor-" + ns},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "validations.konductor.konghq.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
			FailurePolicy:           &ignore,
			MatchPolicy:             &equivalent,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			Rules: []admissionregistrationv1.RuleWithOperations{
				{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{"networking.k8s.io"}, APIVersions: []string{"v1"}, Resources: []string{"ingresses"}}},
				{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{"configuration.konghq.com"}, APIVersions: []string{"v1"}, Resources: []string{"kongplugins"}}},
			},
		}},
	}
	require.NoError(t, admin.Create(context.Background(), vwc))
	t.Cleanup(func() { _ = admin.Delete(context.Background(), vwc) })
}

// The API server, configured with konductor's webhook, refuses an Ingress whose path regex
// Kong would refuse, with the translator's message naming the field (with Rust's regex syntax
// once the gateway said its router is traditional_compatible), and a KongPlugin whose
// configuration Kong's schema refuses; it stores a good Ingress. With the webhook down and
// failurePolicy Ignore, writes still succeed.
func TestAdmissionWebhookRefusesWhatKongWouldRefuse(t *testing.T) {
	ns := newNamespace(t)
	kong := startEmulator(t, kongemu.DBLess)
	certFile, keyFile, caBundle := webhookFiles(t)
	r := startReplica(t, replicaSpec{name: "webhook", namespace: ns, gateways: []string{kong.URL},
		args: []string{"--admission-webhook-listen", "127.0.0.1:0", "--admission-webhook-cert-file", certFile, "--admission-webhook-key-file", keyFile}})
	addr := r.ctrl.AdmissionWebhookAddr()
	require.NotNil(t, addr)
	createAll(t, app(ns, "web", "web.example.com"))
	registerWebhook(t, ns, fmt.Sprintf("https://%s/", addr), caBundle)

	bad := app(ns, "bad", "bad.example.com")[2].(*netv1.Ingress)
	bad.Spec.Rules[0].HTTP.Paths[0].Path = "/~/api/(v1"
	implementationSpecific := netv1.PathTypeImplementationSpecific
	bad.Spec.Rules[0].HTTP.Paths[0].PathType = &implementationSpecific

	// The API server reads webhook configurations from its own informer, and konductor allows
	// everything until its cache synced: wait until the refusal comes.
	var err error
	require.Eventually(t, func() bool {
		err = admin.Create(context.Background(), bad.DeepCopy())
		if err == nil {
			_ = admin.Delete(context.Background(), bad.DeepCopy())
		}
		return err != nil
	}, 60*time.Second, 200*time.Millisecond, "the bad Ingress was never refused")
	require.ErrorContains(t, err, "admission webhook")
	require.ErrorContains(t, err, "denied the request")
	require.ErrorContains(t, err, fmt.Sprintf("Ingress %s/bad: spec.rules[0].http.paths[0].path: invalid regex", ns))

	good := app(ns, "good", "good.example.com")
	createAll(t, good)
	require.NoError(t, admin.Get(context.Background(), client.ObjectKeyFromObject(good[2]), &netv1.Ingress{}))

	// Once the gateway said its router (the emulator's is traditional_compatible, Kong 3's
	// default), regexes are checked as the sync loop checks them, with Rust's syntax too: a
	// "{" that PCRE reads as a literal is refused.
	r.waitFirstSync(t, 60*time.Second)
	braces := app(ns, "braces", "braces.example.com")[2].(*netv1.Ingress)
	braces.Spec.Rules[0].HTTP.Paths[0].Path = "/~/v1/{id}"
	braces.Spec.Rules[0].HTTP.Paths[0].PathType = &implementationSpecific
	err = admin.Create(context.Background(), braces)
	require.ErrorContains(t, err, "denied the request")
	require.ErrorContains(t, err, fmt.Sprintf("Ingress %s/braces: spec.rules[0].http.paths[0].path:", ns))
	require.ErrorContains(t, err, "repetition quantifier")

	plugin := &kongv1.KongPlugin{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "limit"}, PluginName: "rate-limiting",
		Config: apiextensionsv1.JSON{Raw: []byte(`{"minute": "often"}`)}}
	err = admin.Create(context.Background(), plugin.DeepCopy())
	require.ErrorContains(t, err, fmt.Sprintf("KongPlugin %s/limit: config.minute:", ns))

	r.stop(t) // the webhook is down; failurePolicy Ignore lets writes through
	require.NoError(t, admin.Create(context.Background(), bad.DeepCopy()))
	require.NoError(t, admin.Create(context.Background(), plugin.DeepCopy()))
}

// config/webhook, added to an overlay, gives a controller that serves the webhook (its
// settings parse, with KIC's default certificate files, where the certificate Secret is
// mounted), a Service that reaches it, and a webhook configuration the API server accepts,
// with failurePolicy Ignore and a path of "/".
func TestManifestsWebhookComponent(t *testing.T) {
	objs := render(t, filepath.Join("..", "test", "integration", "testdata", "webhook-overlay"))
	ctx := context.Background()
	for _, o := range objs {
		if o.GroupVersionKind().Group == "cert-manager.io" { // cert-manager's CRDs are not installed here
			continue
		}
		if o.GetKind() == "Namespace" {
			if err := admin.Create(ctx, o.DeepCopy()); !apierrors.IsAlreadyExists(err) {
				require.NoError(t, err)
			}
			continue
		}
		require.NoError(t, admin.Patch(ctx, o.DeepCopy(), client.Apply, client.DryRunAll, client.ForceOwnership, client.FieldOwner("webhook-test")),
			"server-side dry-run apply of %s %s", o.GetKind(), o.GetName())
	}

	hooks := webhookConfigurationOf(t, objs, "konductor-validations")
	require.Len(t, hooks.Webhooks, 2)
	for _, w := range hooks.Webhooks {
		require.Equal(t, admissionregistrationv1.Ignore, *w.FailurePolicy, w.Name)
		require.Equal(t, "/", *w.ClientConfig.Service.Path, w.Name)
		require.Equal(t, "konductor-webhook", w.ClientConfig.Service.Name, w.Name)
	}
	require.Equal(t, "kong/konductor-webhook", hooks.Annotations["cert-manager.io/inject-ca-from"])

	dep := find(objs, "Deployment", "konductor")
	var d appsv1.Deployment
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(dep.Object, &d))
	var environ, args []string
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name != "controller" {
			continue
		}
		args = c.Args[1:]
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				environ = append(environ, e.Name+"="+e.Value)
			}
		}
	}
	cfg, err := config.ParseEnviron(args, environ)
	require.NoError(t, err)
	require.Equal(t, "konductor-webhook-cert", requireServesWebhook(t, dep, cfg))
	svc := find(objs, "Service", "konductor-webhook")
	require.NotNil(t, svc)
}
