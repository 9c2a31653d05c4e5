package diagnostics

import (
	"context"
	"crypto/md5" //nolint:gosec // Kong's configuration_hash is an md5
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/kong/go-kong/kong"
	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

const (
	consumerKey   = "carol-very-secret-key"
	pluginToken   = "tok-0123456789abcdef"
	configFromMsg = "configfrom-private-message"
)

// app is an Ingress routing <name>.example.com to a Service of that name with a ready
// endpoint; plugins is its konghq.com/plugins annotation.
func app(name, plugins string) []client.Object {
	class, prefix, ready, port := "kong", netv1.PathTypePrefix, true, int32(8080)
	ing := &netv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-ing-" + name)},
		Spec: netv1.IngressSpec{IngressClassName: &class, Rules: []netv1.IngressRule{{
			Host: name + ".example.com",
			IngressRuleValue: netv1.IngressRuleValue{HTTP: &netv1.HTTPIngressRuleValue{Paths: []netv1.HTTPIngressPath{{
				Path: "/", PathType: &prefix,
				Backend: netv1.IngressBackend{Service: &netv1.IngressServiceBackend{Name: name, Port: netv1.ServiceBackendPort{Number: 80}}},
			}}}},
		}}},
	}
	if plugins != "" {
		ing.Annotations = map[string]string{"konghq.com/plugins": plugins}
	}
	return []client.Object{ing,
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-svc-" + name)},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
		},
		&discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: name + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Port: &port}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		},
	}
}

// cluster has an Ingress with a plugin configured from a Secret (configFrom), a consumer
// with a key-auth credential, and an Ingress with a plugin Kong does not have, whose
// configuration holds a token: Kong refuses the configuration and quotes that plugin.
func cluster() []client.Object {
	objs := append(app("a", "terminate"), app("b", "broken")...)
	return append(objs,
		&kongv1.KongPlugin{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "terminate", UID: "uid-terminate"},
			PluginName: "request-termination",
			ConfigFrom: &kongv1.ConfigSource{SecretValue: kongv1.SecretValueFromSource{Secret: "terminate-conf", Key: "config"}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "terminate-conf"},
			Data: map[string][]byte{"config": []byte(`{"status_code": 403, "message": "` + configFromMsg + `"}`)}},
		&kongv1.KongPlugin{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "broken", UID: "uid-broken"},
			PluginName: "no-such-plugin", Config: apiextensionsv1.JSON{Raw: []byte(`{"api_token": "` + pluginToken + `"}`)}},
		&kongv1.KongConsumer{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "carol", UID: "uid-carol",
			Annotations: map[string]string{"kubernetes.io/ingress.class": "kong"}}, Username: "carol", Credentials: []string{"carol-key"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "carol-key", Labels: map[string]string{"konghq.com/credential": "key-auth"}},
			Data: map[string][]byte{"key": []byte(consumerKey)}},
	)
}

type syncedBarrier struct{}

func (syncedBarrier) WaitForCacheSync(context.Context) error { return nil }

// runLoop syncs cluster() to a DB-less Kong emulator, fallback on, telling diag; it returns
// once a fallback was tried.
func runLoop(t *testing.T, diag dataplane.Diagnostics) *kongemu.Server {
	t.Helper()
	srv, err := kongemu.New(kongemu.Options{}).Start()
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	c, err := kong.NewClient(kong.String(srv.URL), &http.Client{})
	require.NoError(t, err)
	st, err := store.NewForObjects(cluster(), store.Options{})
	require.NoError(t, err)
	fallbackTried := make(chan struct{})
	l := dataplane.NewLoop(dataplane.Options{
		Source: st, Barrier: syncedBarrier{},
		Translate: func(s *store.Snapshot) translator.Result { return translator.Build(s, translator.Options{}) },
		Gateways:  []dataplane.Gateway{dataplane.NewDetectingGateway(srv.URL, c, nil, logr.Discard())},
		Period:    time.Hour, Logger: testr.New(t), Fallback: true, Diagnostics: diag,
		Reporter: dataplane.ReporterFunc(func(_ context.Context, r dataplane.Round) {
			for _, g := range r.Gateways {
				if g.Fallback != nil {
					select {
					case <-fallbackTried:
					default:
						close(fallbackTried)
					}
				}
			}
		}),
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	select {
	case <-fallbackTried:
	case <-time.After(10 * time.Second):
		t.Fatal("no fallback was tried")
	}
	return srv
}

// Through the loop: Kong refuses the configuration naming the broken plugin, the fallback
// without it and its Ingress is taken. failed is the refused configuration, raw-error Kong's
// answer, successful the fallback Kong holds, fallback names what was left out; without
// --dump-sensitive-config none of them holds the credential, the plugin's token or the value
// of the configFrom Secret.
func TestDumpsOfTheLoop(t *testing.T) {
	s := New(Options{DumpConfig: true})
	srv := runLoop(t, s.Diagnostics())
	h := s.Handler()

	code, _, failed := get(t, h, "/debug/config/failed")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, failed, "no-such-plugin", "the refused configuration")

	code, _, raw := get(t, h, "/debug/config/raw-error")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, raw, "no-such-plugin", "Kong's answer names the plugin it refused")
	require.Contains(t, raw, "flattened_errors")

	code, _, succeeded := get(t, h, "/debug/config/successful")
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, succeeded, "no-such-plugin", "the fallback, without the broken plugin")
	require.Contains(t, succeeded, "a.example.com")
	require.NotContains(t, succeeded, "b.example.com", "nor the Ingress that uses it")

	_, _, fb := get(t, h, "/debug/config/fallback")
	require.Contains(t, fb, `"status":"triggered"`)
	require.Contains(t, fb, `"brokenObjects":[{"group":"configuration.konghq.com","kind":"KongPlugin"`)
	require.Contains(t, fb, `"name":"broken","id":"uid-broken"`)

	for name, body := range map[string]string{"failed": failed, "raw-error": raw, "successful": succeeded} {
		require.NotContains(t, body, consumerKey, name)
		require.NotContains(t, body, pluginToken, name)
		require.NotContains(t, body, configFromMsg, name)
	}
	require.Contains(t, succeeded, `"username":"carol"`, "what is no secret stays")

	// What the server holds for what Kong holds: the dump's configuration is byte for byte
	// the one Kong took (Kong's configuration_hash is the md5 of it).
	sensitive := New(Options{DumpConfig: true, DumpSensitiveConfig: true})
	srv = runLoop(t, sensitive.Diagnostics())
	_, _, succeeded = get(t, sensitive.Handler(), "/debug/config/successful")
	d := readDump(t, succeeded)
	sum := md5.Sum(d.Config) //nolint:gosec // compared with Kong's
	require.Equal(t, srv.ConfigHash(), hex.EncodeToString(sum[:]))
	require.Contains(t, string(d.Config), consumerKey)
	require.Contains(t, string(d.Config), configFromMsg)
	_, _, raw = get(t, sensitive.Handler(), "/debug/config/raw-error")
	require.Contains(t, raw, pluginToken, "Kong's body as it came")
	require.True(t, strings.HasPrefix(raw, "{"))
}
