package translator

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"reflect"
	"strings"
	"time"

	"github.com/blang/semver/v4"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	kongv1alpha1 "github.com/kong/kubernetes-configuration/api/configuration/v1alpha1"
	kongv1beta1 "github.com/kong/kubernetes-configuration/api/configuration/v1beta1"
	incubatorv1alpha1 "github.com/kong/kubernetes-configuration/api/incubator/v1alpha1"

	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/store"
)

// objectGen builds a snapshot of random objects out of fuzz input bytes, every byte a choice
// (which kind, how many, which name, which value): a fuzzer that mutates the bytes mutates
// objects, not YAML syntax. Names and namespaces come from small pools, so references
// (backends, plugins, Secrets, parentRefs, KongIngress and upstream policy annotations,
// consumer groups, facades, ReferenceGrants) find their targets often; values come from
// pools of good and bad ones, and now and then from the input bytes themselves. Input that
// runs out is read again from its start (an empty one reads as zeros), so that every input
// makes a snapshot and an edit of it.
type objectGen struct {
	data []byte
	pos  int
	rv   int
	cert testCertPEM
	// rotated is a second certificate, that a TLS Secret's new version may hold (edit).
	rotated testCertPEM
}

// testCertPEM is one self-signed certificate and its key, made once per fuzz run: the
// generator's valid TLS Secret, CA certificate and mTLS credential.
type testCertPEM struct{ cert, key string }

func newTestCertPEM() (testCertPEM, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return testCertPEM{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "a.example.com"}, DNSNames: []string{"a.example.com", "*.example.com"},
		NotBefore: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), NotAfter: time.Date(2090, 1, 1, 0, 0, 0, 0, time.UTC),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return testCertPEM{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return testCertPEM{}, err
	}
	return testCertPEM{
		cert: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		key:  string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})),
	}, nil
}

func (g *objectGen) byte() byte {
	if len(g.data) == 0 {
		return 0
	}
	b := g.data[g.pos%len(g.data)]
	g.pos++
	return b
}

// intn is a number in [0, n).
func (g *objectGen) intn(n int) int {
	if n <= 1 {
		return 0
	}
	return int(g.byte()) % n
}

func (g *objectGen) bool() bool { return g.byte()&1 == 1 }

// maybe is true one time in n.
func (g *objectGen) maybe(n int) bool { return g.intn(n) == 0 }

func oneOf[T any](g *objectGen, l ...T) T { return l[g.intn(len(l))] }

// str is a value of pool, or one time in 16 a few raw input bytes (any string at all).
func (g *objectGen) str(pool ...string) string {
	if g.intn(16) == 0 {
		b := make([]byte, g.intn(12))
		for i := range b {
			b[i] = g.byte()
		}
		return string(b)
	}
	return oneOf(g, pool...)
}

func ptr[T any](v T) *T { return &v }

// maybePtr is nil or a pointer to a value of pool.
func maybePtr[T any](g *objectGen, pool ...T) *T {
	if g.bool() {
		return nil
	}
	return ptr(oneOf(g, pool...))
}

var (
	fuzzNames      = []string{"a", "b", "c"}
	fuzzNamespaces = []string{"default", "other"}
	fuzzHosts      = []string{"", "a.example.com", "b.example.com", "*.example.com", "*", "bad host", "A.EXAMPLE.COM", "a..b", "xn--bcher-kva.example", "10.0.0.1"}
	fuzzPaths      = []string{"", "/", "/a", "/a/b/", "~/re(", "/~^x$", "/a{", "/x/*", "~/ok/[0-9]+$", "/a b", "/%", "/~/(?<name>x)"}
	fuzzPortNames  = []string{"http", "https", "grpc", "tcp", "udp", ""}
	fuzzPorts      = []int32{80, 443, 8080, 9000, 0, -1, 65536}
	fuzzAnyValues  = []string{"", "true", "false", "0", "1", "-1", "5", "307", "abc", "99999999999", "http", "https", "grpc", "grpcs", "tcp", "tls", "udp", "tls_passthrough",
		"ws", "wss", "GET,POST", "get", "a", "b", "a,b", "a, b,,c", "other:a", "default/a", "v0", "v1", "/", "/x/$1", "~/a", "a.example.com", "*.example.com", "bad host",
		"x-a:1", "round-robin", "consistent-hashing", "1,2,3", "key-auth", "a,b,c,d,e,f"}
	// fuzzAnnotations are the annotations the translator reads (and the class annotation).
	fuzzAnnotations = []string{
		annStripPath, annForceSSLRedirect, annHTTPSRedirectCode, annPreserveHost, annRequestBuffering, annResponseBuffering,
		annProtocols, annRegexPriority, annMethods, annSNIs, annHostAliases, annHeadersPrefix + "x-a", annHeadersPrefix + "X_B ",
		annHeadersSeparator, annPathHandling, annCACertSecret, annCACertConfigMap, annCACertSecretsPlural, annCACertConfigMapPlural, annProtocol, annPath, annConnectTimeout,
		annReadTimeout, annWriteTimeout, annRetries, annTLSVerify, annTLSVerifyDepth, annHostHeader, annServiceUpstream,
		annOverride, annUpstreamPolicy, annPlugins, annRegexPrefix, "konghq.com/rewrite", "konghq.com/client-cert", "konghq.com/tags",
		store.IngressClassAnnotation, "konghq.com/unknown",
	}
	fuzzPluginNames   = []string{"key-auth", "basic-auth", "rate-limiting", "cors", "request-transformer", "acl", "jwt", "prometheus", "ip-restriction", "correlation-id", "unknown-plugin", ""}
	fuzzPluginConfigs = []string{"", "{}", `{"minute":5}`, `{"minute":"abc"}`, `{"key_names":["k"]}`, `{"allow":["a"]}`, `{"origins":["*"],"credentials":true}`,
		`{"add":{"headers":["x:1"]}}`, "null", "[]", `"s"`, "1", `{"a":{"b":[1,{"c":null}]}}`, `{"config":{"minute":1}}`, `{"policy":"redis","redis":{"host":"x"}}`}
)

func (g *objectGen) version() string { g.rv++; return fmt.Sprintf("%d", g.rv) }

// meta is an object's metadata: a name and namespace of the pools, a version of its own,
// an age, and random annotations (namespaced false: cluster-scoped).
func (g *objectGen) meta(namespaced bool) metav1.ObjectMeta {
	// Names are the API server's (valid and unique by namespace); only values may be anything.
	m := metav1.ObjectMeta{Name: oneOf(g, fuzzNames...), ResourceVersion: g.version(), Generation: int64(g.intn(3))}
	if namespaced {
		m.Namespace = oneOf(g, fuzzNamespaces...)
	}
	m.UID = types.UID(m.Namespace + "/" + m.Name + "/" + m.ResourceVersion) // a new object, a new UID
	m.CreationTimestamp = metav1.NewTime(time.Date(2024, 1, 1, 0, g.intn(4), 0, 0, time.UTC))
	for n := g.intn(4); n > 0; n-- {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[oneOf(g, fuzzAnnotations...)] = g.str(fuzzAnyValues...)
	}
	return m
}

func (g *objectGen) json(pool ...string) apiextensionsv1.JSON {
	if s := g.str(pool...); s != "" {
		return apiextensionsv1.JSON{Raw: []byte(s)}
	}
	return apiextensionsv1.JSON{}
}

// snapshot is the whole generated snapshot: each kind's objects in turn, a few of each.
func (g *objectGen) snapshot() *store.Snapshot {
	s := &store.Snapshot{
		IngressClass:          oneOf(g, "kong", "", "other"),
		IngressClassIsDefault: g.bool(),
		NamespaceLabels:       map[string]map[string]string{"default": {"team": "a"}, "other": {"team": oneOf(g, "a", "b")}},
	}
	if g.maybe(4) {
		s.IngressClassParameters = &kongv1alpha1.IngressClassParameters{ObjectMeta: g.meta(true),
			Spec: kongv1alpha1.IngressClassParametersSpec{ServiceUpstream: g.bool(), EnableLegacyRegexDetection: g.bool()}}
	}
	// Each step adds a few objects of one kind; the bytes choose the order and the counts.
	for steps := g.intn(26); steps > 0; steps-- {
		switch g.intn(26) {
		case 0, 1:
			s.Ingresses = append(s.Ingresses, g.ingress())
		case 2, 3:
			s.Services = append(s.Services, g.service())
		case 4:
			s.EndpointSlices = append(s.EndpointSlices, g.endpointSlice())
		case 5:
			s.Secrets = append(s.Secrets, g.secret())
		case 6:
			s.KongPlugins = append(s.KongPlugins, g.kongPlugin())
		case 7:
			s.KongClusterPlugins = append(s.KongClusterPlugins, g.kongClusterPlugin())
		case 8:
			s.KongConsumers = append(s.KongConsumers, g.kongConsumer())
		case 9:
			s.KongConsumerGroups = append(s.KongConsumerGroups, &kongv1beta1.KongConsumerGroup{ObjectMeta: g.meta(true),
				Spec: kongv1beta1.KongConsumerGroupSpec{Name: g.str("", "a", "group-b")}})
		case 10:
			s.KongIngresses = append(s.KongIngresses, g.kongIngress())
		case 11:
			s.KongUpstreamPolicies = append(s.KongUpstreamPolicies, g.upstreamPolicy())
		case 12:
			s.TCPIngresses = append(s.TCPIngresses, g.tcpIngress())
		case 13:
			s.UDPIngresses = append(s.UDPIngresses, g.udpIngress())
		case 14:
			s.KongVaults = append(s.KongVaults, &kongv1alpha1.KongVault{ObjectMeta: g.meta(false), Spec: kongv1alpha1.KongVaultSpec{
				Backend: g.str("env", "aws", "", "bad backend"), Prefix: g.str("env-a", "a", "", "bad prefix", "env"),
				Description: g.str("", "d"), Config: g.json("", "{}", `{"prefix":"X_"}`, "[]", `{"a":1}`)}})
		case 15:
			s.KongCustomEntities = append(s.KongCustomEntities, g.customEntity())
		case 16:
			s.KongLicenses = append(s.KongLicenses, &kongv1alpha1.KongLicense{ObjectMeta: g.meta(false),
				RawLicenseString: g.str("", `{"license":{"payload":{},"signature":"x","version":"1"}}`, "not json"), Enabled: g.bool()})
		case 17:
			s.KongServiceFacades = append(s.KongServiceFacades, &incubatorv1alpha1.KongServiceFacade{ObjectMeta: g.meta(true),
				Spec: incubatorv1alpha1.KongServiceFacadeSpec{Backend: incubatorv1alpha1.KongServiceFacadeBackend{Name: g.str(fuzzNames...), Port: oneOf(g, fuzzPorts...)}}})
		case 18:
			s.GatewayClasses = append(s.GatewayClasses, &gatewayv1.GatewayClass{ObjectMeta: g.meta(false),
				Spec: gatewayv1.GatewayClassSpec{ControllerName: gatewayv1.GatewayController(g.str(gatewayapi.DefaultControllerName, "example.com/other", ""))}})
		case 19:
			s.Gateways = append(s.Gateways, g.gateway())
		case 20:
			s.HTTPRoutes = append(s.HTTPRoutes, g.httpRoute())
		case 21:
			s.GRPCRoutes = append(s.GRPCRoutes, g.grpcRoute())
		case 22:
			appendRoute(s, g.l4Route(g.intn(3)))
		case 23:
			s.ReferenceGrants = append(s.ReferenceGrants, g.referenceGrant())
		case 24:
			s.BackendTLSPolicies = append(s.BackendTLSPolicies, g.backendTLSPolicy())
		default:
			s.ConfigMaps = append(s.ConfigMaps, &corev1.ConfigMap{ObjectMeta: g.meta(true), Data: map[string]string{
				oneOf(g, "ca.crt", "x"): g.str(g.cert.cert, "garbage", "")}})
			s.ConfigMaps[len(s.ConfigMaps)-1].Labels = map[string]string{store.CACertLabel: g.str("true", "false")}
		}
	}
	g.sideways().listenerSets(s)
	unique(s)
	return s
}

// sideways is a second generator over the same input read backwards: what it chooses leaves
// the main reading, and so what inputs saved before it existed build, as it was.
func (g *objectGen) sideways() *objectGen {
	data := make([]byte, len(g.data))
	for i, b := range g.data {
		data[len(data)-1-i] = b
	}
	return &objectGen{data: data, rv: 1 << 20, cert: g.cert, rotated: g.rotated}
}

// listenerSets adds to s, now and then, ListenerSets naming its Gateways (or another), with
// listeners like a Gateway's, creation times that tie or not, Gateways that allow them
// (allowedListeners) and HTTPRoutes that name them as parent. Nothing changes when it adds
// none.
func (g *objectGen) listenerSets(s *store.Snapshot) {
	for n := g.intn(4); n > 0; n-- {
		ls := &gatewayv1.ListenerSet{ObjectMeta: g.meta(true)}
		ls.CreationTimestamp = metav1.NewTime(time.Unix(int64(g.intn(3)), 0))
		ls.Spec.ParentRef = gatewayv1.ParentGatewayReference{Name: gatewayv1.ObjectName(g.str(fuzzNames...)),
			Namespace: maybePtr(g, gatewayv1.Namespace("default"), "other"), Kind: maybePtr(g, gatewayv1.Kind("Gateway"), "Other")}
		for _, l := range g.gateway().Spec.Listeners {
			ls.Spec.Listeners = append(ls.Spec.Listeners, gatewayv1.ListenerEntry(l))
		}
		s.ListenerSets = append(s.ListenerSets, ls)
		if len(s.Gateways) > 0 {
			gw := s.Gateways[g.intn(len(s.Gateways))]
			if !g.maybe(4) { // mostly a Gateway of the snapshot, of a class of ours
				ls.Spec.ParentRef = gatewayv1.ParentGatewayReference{Name: gatewayv1.ObjectName(gw.Name), Namespace: ptr(gatewayv1.Namespace(gw.Namespace))}
				if !g.maybe(4) {
					gw.Spec.GatewayClassName = "listenersets"
					s.GatewayClasses = append(s.GatewayClasses, &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "listenersets", ResourceVersion: g.version()},
						Spec: gatewayv1.GatewayClassSpec{ControllerName: gatewayapi.DefaultControllerName}})
				}
			}
			from := oneOf(g, gatewayv1.NamespacesFromAll, gatewayv1.NamespacesFromSame, gatewayv1.NamespacesFromSelector, gatewayv1.NamespacesFromNone, "Bad")
			gw.Spec.AllowedListeners = &gatewayv1.AllowedListeners{Namespaces: &gatewayv1.ListenerNamespaces{From: &from}}
			if from == gatewayv1.NamespacesFromSelector {
				gw.Spec.AllowedListeners.Namespaces.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": g.str("a", "b")}}
			}
		}
		if len(s.HTTPRoutes) > 0 && g.bool() {
			r := s.HTTPRoutes[g.intn(len(s.HTTPRoutes))]
			r.Spec.ParentRefs = append(r.Spec.ParentRefs, gatewayv1.ParentReference{Kind: ptr(gatewayv1.Kind("ListenerSet")),
				Name: gatewayv1.ObjectName(ls.Name), Namespace: maybePtr(g, gatewayv1.Namespace(ls.Namespace), "other")})
			if g.maybe(3) {
				r.Spec.ParentRefs[len(r.Spec.ParentRefs)-1].SectionName = ptr(ls.Spec.Listeners[g.intn(len(ls.Spec.Listeners))].Name)
			}
			if !g.maybe(4) { // a route of the set's namespace, which its listeners admit by default
				r.Namespace = ls.Namespace
				r.UID = types.UID(r.Namespace + "/" + r.Name + "/" + r.ResourceVersion)
			}
		}
	}
}

func (g *objectGen) ingress() *netv1.Ingress {
	ing := &netv1.Ingress{ObjectMeta: g.meta(true)}
	if g.maybe(3) {
		ing.Spec.IngressClassName = maybePtr(g, "kong", "other", "")
	}
	if g.maybe(5) {
		ing.Spec.DefaultBackend = g.ingressBackend()
	}
	for n := g.intn(3); n > 0; n-- {
		r := netv1.IngressRule{Host: g.str(fuzzHosts...)}
		if !g.maybe(6) {
			r.HTTP = &netv1.HTTPIngressRuleValue{}
			for m := 1 + g.intn(3); m > 0; m-- {
				p := netv1.HTTPIngressPath{Path: g.str(fuzzPaths...), Backend: *g.ingressBackend()}
				p.PathType = maybePtr(g, netv1.PathTypePrefix, netv1.PathTypeExact, netv1.PathTypeImplementationSpecific, "Bad")
				r.HTTP.Paths = append(r.HTTP.Paths, p)
			}
		}
		ing.Spec.Rules = append(ing.Spec.Rules, r)
	}
	if g.maybe(3) {
		ing.Spec.TLS = []netv1.IngressTLS{{Hosts: g.hostStrings(), SecretName: g.str(append(fuzzNames, "")...)}}
	}
	return ing
}

func (g *objectGen) hostStrings() []string {
	var out []string
	for n := g.intn(3); n > 0; n-- {
		out = append(out, g.str(fuzzHosts...))
	}
	return out
}

func (g *objectGen) ingressBackend() *netv1.IngressBackend {
	if g.maybe(8) {
		return &netv1.IngressBackend{Resource: &corev1.TypedLocalObjectReference{
			APIGroup: maybePtr(g, "incubator.ingress-controller.konghq.com", "other.example.com"), Kind: g.str("KongServiceFacade", "Other"), Name: g.str(fuzzNames...)}}
	}
	port := netv1.ServiceBackendPort{}
	if g.bool() {
		port.Number = oneOf(g, fuzzPorts...)
	} else {
		port.Name = g.str(fuzzPortNames...)
	}
	return &netv1.IngressBackend{Service: &netv1.IngressServiceBackend{Name: g.str(fuzzNames...), Port: port}}
}

func (g *objectGen) service() *corev1.Service {
	svc := &corev1.Service{ObjectMeta: g.meta(true)}
	svc.Spec.Type = oneOf(g, corev1.ServiceTypeClusterIP, corev1.ServiceTypeExternalName, corev1.ServiceTypeNodePort, "")
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		// db.other: another namespace's Service name, told to the owner (namespaceExists).
		svc.Spec.ExternalName = g.str("example.com", "", "bad host", "db.other")
	}
	for n := g.intn(3); n > 0; n-- {
		p := corev1.ServicePort{Name: g.str(fuzzPortNames...), Port: oneOf(g, fuzzPorts...), Protocol: oneOf(g, corev1.ProtocolTCP, corev1.ProtocolUDP, "")}
		if g.bool() {
			p.TargetPort = intstr.FromInt32(oneOf(g, fuzzPorts...))
		} else {
			p.TargetPort = intstr.FromString(g.str(fuzzPortNames...))
		}
		p.AppProtocol = maybePtr(g, "http", "kubernetes.io/h2c", "grpc")
		svc.Spec.Ports = append(svc.Spec.Ports, p)
	}
	return svc
}

func (g *objectGen) endpointSlice() *discoveryv1.EndpointSlice {
	es := &discoveryv1.EndpointSlice{ObjectMeta: g.meta(true), AddressType: oneOf(g, discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN)}
	es.Name += "-" + g.str("1", "2")
	if !g.maybe(8) {
		es.Labels = map[string]string{discoveryv1.LabelServiceName: g.str(fuzzNames...)}
	}
	for n := g.intn(3); n > 0; n-- {
		es.Ports = append(es.Ports, discoveryv1.EndpointPort{Name: maybePtr(g, fuzzPortNames...), Port: maybePtr(g, fuzzPorts...),
			Protocol: maybePtr(g, corev1.ProtocolTCP, corev1.ProtocolUDP)})
	}
	for n := g.intn(3); n > 0; n-- {
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{g.str("10.0.0.1", "10.0.0.2", "fd00::1", "bad", "a.example.com")},
			Conditions: discoveryv1.EndpointConditions{Ready: maybePtr(g, true, false), Serving: maybePtr(g, true, false), Terminating: maybePtr(g, true, false)}})
	}
	return es
}

func (g *objectGen) secret() *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: g.meta(true), Type: oneOf(g, corev1.SecretTypeOpaque, corev1.SecretTypeTLS, "")}
	switch g.intn(4) {
	case 0:
		s.Labels = map[string]string{CredentialLabel: g.str("key-auth", "basic-auth", "jwt", "acl", "hmac-auth", "oauth2", "mtls-auth", "konnect", "bad")}
	case 1:
		s.Labels = map[string]string{store.CACertLabel: g.str("true", "false")}
	}
	s.Data = map[string][]byte{}
	for n := g.intn(5); n > 0; n-- {
		key := oneOf(g, "tls.crt", "tls.key", "ca.crt", "cert", "id", "key", "username", "password", "secret", "algorithm", "rsa_public_key",
			"group", "client_id", "client_secret", "redirect_uris", "name", "kongCredType", "value", "subject_name")
		s.Data[key] = []byte(g.str(g.cert.cert, g.cert.key, "", "x", "HS256", "RS256", "https://a.example.com", "a", "not pem"))
	}
	return s
}

func (g *objectGen) pluginFields() (name string, cfg apiextensionsv1.JSON, protocols []kongv1.KongProtocol, disabled bool, instance, consumerRef string) {
	for n := g.intn(3); n > 0; n-- {
		protocols = append(protocols, kongv1.KongProtocol(g.str("http", "https", "grpc", "tcp", "bad")))
	}
	return g.str(fuzzPluginNames...), g.json(fuzzPluginConfigs...), protocols, g.maybe(6), g.str("", "", "i"), g.str("", "", "a")
}

func (g *objectGen) kongPlugin() *kongv1.KongPlugin {
	p := &kongv1.KongPlugin{ObjectMeta: g.meta(true)}
	p.PluginName, p.Config, p.Protocols, p.Disabled, p.InstanceName, p.ConsumerRef = g.pluginFields()
	if g.maybe(5) {
		p.ConfigFrom = &kongv1.ConfigSource{SecretValue: kongv1.SecretValueFromSource{Secret: g.str(fuzzNames...), Key: g.str("key", "x")}}
	}
	if g.maybe(6) {
		p.ConfigPatches = []kongv1.ConfigPatch{{Path: g.str("/minute", "/a/b", "", "bad"),
			ValueFrom: kongv1.ConfigSource{SecretValue: kongv1.SecretValueFromSource{Secret: g.str(fuzzNames...), Key: g.str("key", "x")}}}}
	}
	p.RunOn = g.str("", "first", "bad")
	return p
}

func (g *objectGen) kongClusterPlugin() *kongv1.KongClusterPlugin {
	p := &kongv1.KongClusterPlugin{ObjectMeta: g.meta(false)}
	p.PluginName, p.Config, p.Protocols, p.Disabled, p.InstanceName, p.ConsumerRef = g.pluginFields()
	if g.bool() {
		p.Labels = map[string]string{labelGlobal: g.str("true", "false")}
	}
	if g.maybe(5) {
		p.ConfigFrom = &kongv1.NamespacedConfigSource{SecretValue: kongv1.NamespacedSecretValueFromSource{
			Namespace: g.str(fuzzNamespaces...), Secret: g.str(fuzzNames...), Key: g.str("key", "x")}}
	}
	return p
}

func (g *objectGen) kongConsumer() *kongv1.KongConsumer {
	c := &kongv1.KongConsumer{ObjectMeta: g.meta(true), Username: g.str("", "u", "v"), CustomID: g.str("", "", "id")}
	for n := g.intn(3); n > 0; n-- {
		c.Credentials = append(c.Credentials, g.str(fuzzNames...))
	}
	for n := g.intn(3); n > 0; n-- {
		c.ConsumerGroups = append(c.ConsumerGroups, g.str(fuzzNames...))
	}
	return c
}

func (g *objectGen) kongIngress() *kongv1.KongIngress {
	k := &kongv1.KongIngress{ObjectMeta: g.meta(true)}
	ints := []int{0, -1, 1, 60000, 1 << 40}
	if g.bool() {
		k.Proxy = &kongv1.KongIngressService{Protocol: maybePtr(g, "http", "https", "grpc", "tcp", "bad"), Path: maybePtr(g, "/", "/a", "a", ""),
			Retries: maybePtr(g, ints...), ConnectTimeout: maybePtr(g, ints...), ReadTimeout: maybePtr(g, ints...), WriteTimeout: maybePtr(g, ints...)}
	}
	if g.bool() {
		k.Route = &kongv1.KongIngressRoute{Methods: []*string{maybePtr(g, "GET", "bad method")}, Headers: map[string][]string{g.str("x-a", "", "Host"): {g.str("1", "~*re(")}},
			Protocols: []*kongv1.KongProtocol{maybePtr(g, kongv1.KongProtocol("http"), "https", "grpc", "bad")}, RegexPriority: maybePtr(g, ints...),
			StripPath: maybePtr(g, true, false), PreserveHost: maybePtr(g, true, false), HTTPSRedirectStatusCode: maybePtr(g, 301, 0, 999),
			PathHandling: maybePtr(g, "v0", "v1", "bad"), SNIs: []*string{maybePtr(g, fuzzHosts...)},
			RequestBuffering: maybePtr(g, true, false), ResponseBuffering: maybePtr(g, true, false)}
	}
	if g.bool() {
		k.Upstream = &kongv1.KongIngressUpstream{HostHeader: maybePtr(g, "a.example.com", ""), Algorithm: maybePtr(g, "round-robin", "consistent-hashing", "least-connections", "bad"),
			Slots: maybePtr(g, ints...), HashOn: maybePtr(g, "header", "cookie", "none", "bad"), HashOnHeader: maybePtr(g, "x-a", ""),
			HashFallback: maybePtr(g, "ip", "header"), HashOnCookie: maybePtr(g, "c"), HashOnCookiePath: maybePtr(g, "/", "bad")}
	}
	return k
}

func (g *objectGen) upstreamPolicy() *kongv1beta1.KongUpstreamPolicy {
	p := &kongv1beta1.KongUpstreamPolicy{ObjectMeta: g.meta(true)}
	ints := []int{0, -1, 10, 65536, 1 << 40}
	p.Spec.Algorithm = maybePtr(g, "round-robin", "consistent-hashing", "least-connections", "sticky-sessions", "latency", "bad")
	p.Spec.Slots = maybePtr(g, ints...)
	hash := func() *kongv1beta1.KongUpstreamHash {
		if g.bool() {
			return nil
		}
		return &kongv1beta1.KongUpstreamHash{Input: maybePtr(g, kongv1beta1.HashInput("ip"), "consumer", "path", "none", "bad"),
			Header: maybePtr(g, "x-a", ""), Cookie: maybePtr(g, "c", ""), CookiePath: maybePtr(g, "/", ""), QueryArg: maybePtr(g, "q"), URICapture: maybePtr(g, "u")}
	}
	p.Spec.HashOn, p.Spec.HashOnFallback = hash(), hash()
	if g.bool() {
		p.Spec.Healthchecks = &kongv1beta1.KongUpstreamHealthcheck{Threshold: maybePtr(g, ints...),
			Active: &kongv1beta1.KongUpstreamActiveHealthcheck{Type: maybePtr(g, "http", "tcp", "bad"), Concurrency: maybePtr(g, ints...),
				HTTPPath: maybePtr(g, "/", "bad"), Timeout: maybePtr(g, ints...),
				Healthy: &kongv1beta1.KongUpstreamHealthcheckHealthy{HTTPStatuses: []kongv1beta1.HTTPStatus{kongv1beta1.HTTPStatus(oneOf(g, 200, 999, 0))}, Interval: maybePtr(g, ints...)}},
			Passive: &kongv1beta1.KongUpstreamPassiveHealthcheck{Type: maybePtr(g, "http", "tcp"),
				Unhealthy: &kongv1beta1.KongUpstreamHealthcheckUnhealthy{HTTPFailures: maybePtr(g, ints...), Timeouts: maybePtr(g, ints...)}}}
	}
	if g.maybe(3) {
		p.Spec.StickySessions = &kongv1beta1.KongUpstreamStickySessions{Cookie: g.str("c", ""), CookiePath: maybePtr(g, "/", "")}
	}
	return p
}

func (g *objectGen) tcpIngress() *kongv1beta1.TCPIngress {
	t := &kongv1beta1.TCPIngress{ObjectMeta: g.meta(true)}
	for n := g.intn(3); n > 0; n-- {
		t.Spec.Rules = append(t.Spec.Rules, kongv1beta1.IngressRule{Host: g.str(fuzzHosts...), Port: int(oneOf(g, fuzzPorts...)),
			Backend: kongv1beta1.IngressBackend{ServiceName: g.str(fuzzNames...), ServicePort: int(oneOf(g, fuzzPorts...))}})
	}
	if g.maybe(3) {
		t.Spec.TLS = []kongv1beta1.IngressTLS{{Hosts: g.hostStrings(), SecretName: g.str(fuzzNames...)}}
	}
	return t
}

func (g *objectGen) udpIngress() *kongv1beta1.UDPIngress {
	u := &kongv1beta1.UDPIngress{ObjectMeta: g.meta(true)}
	for n := g.intn(3); n > 0; n-- {
		u.Spec.Rules = append(u.Spec.Rules, kongv1beta1.UDPIngressRule{Port: int(oneOf(g, fuzzPorts...)),
			Backend: kongv1beta1.IngressBackend{ServiceName: g.str(fuzzNames...), ServicePort: int(oneOf(g, fuzzPorts...))}})
	}
	return u
}

func (g *objectGen) customEntity() *kongv1alpha1.KongCustomEntity {
	e := &kongv1alpha1.KongCustomEntity{ObjectMeta: g.meta(true), Spec: kongv1alpha1.KongCustomEntitySpec{
		EntityType: g.str("degraphql_routes", "services", "", "bad type"), ControllerName: g.str("kong", ""),
		Fields: g.json(`{"uri":"/a","query":"q"}`, "{}", "[]", `{"service":"x"}`, "null", `{"a":{"b":1}}`)}}
	if g.bool() {
		e.Spec.ParentRef = &kongv1alpha1.ObjectReference{Group: maybePtr(g, "configuration.konghq.com", ""), Kind: maybePtr(g, "KongPlugin", "KongClusterPlugin", "Other"),
			Namespace: maybePtr(g, fuzzNamespaces...), Name: g.str(fuzzNames...)}
	}
	return e
}

func (g *objectGen) sectionName() *gatewayv1.SectionName {
	return maybePtr(g, gatewayv1.SectionName("http"), "https", "tcp", "tls", "udp", "main", "")
}

// routeParents are a route's parentRefs: Gateways of the pools, now and then of another
// kind, listener, port or namespace.
func (g *objectGen) routeParents() gatewayv1.CommonRouteSpec {
	var c gatewayv1.CommonRouteSpec
	for n := 1 + g.intn(2); n > 0; n-- {
		c.ParentRefs = append(c.ParentRefs, gatewayv1.ParentReference{
			Group: maybePtr(g, gatewayv1.Group(gatewayv1.GroupName), "", "other.example.com"), Kind: maybePtr(g, gatewayv1.Kind("Gateway"), "Service", "Other"),
			Namespace: maybePtr(g, gatewayv1.Namespace("default"), "other"), Name: gatewayv1.ObjectName(g.str(fuzzNames...)),
			SectionName: g.sectionName(), Port: maybePtr(g, gatewayv1.PortNumber(80), 443, 9000, 0)})
	}
	return c
}

func (g *objectGen) hostnames() []gatewayv1.Hostname {
	var out []gatewayv1.Hostname
	for _, h := range g.hostStrings() {
		out = append(out, gatewayv1.Hostname(h))
	}
	return out
}

func (g *objectGen) backendObject() gatewayv1.BackendObjectReference {
	return gatewayv1.BackendObjectReference{Group: maybePtr(g, gatewayv1.Group(""), "other.example.com", "incubator.ingress-controller.konghq.com"),
		Kind: maybePtr(g, gatewayv1.Kind("Service"), "KongServiceFacade", "Other"), Name: gatewayv1.ObjectName(g.str(fuzzNames...)),
		Namespace: maybePtr(g, gatewayv1.Namespace("default"), "other"), Port: maybePtr(g, gatewayv1.PortNumber(80), 8080, 9000, 0)}
}

func (g *objectGen) backendRefs() []gatewayv1.BackendRef {
	var out []gatewayv1.BackendRef
	for n := g.intn(3); n > 0; n-- {
		out = append(out, gatewayv1.BackendRef{BackendObjectReference: g.backendObject(), Weight: maybePtr(g, int32(0), 1, 100, -1)})
	}
	return out
}

func (g *objectGen) gateway() *gatewayv1.Gateway {
	gw := &gatewayv1.Gateway{ObjectMeta: g.meta(true), Spec: gatewayv1.GatewaySpec{GatewayClassName: gatewayv1.ObjectName(g.str(fuzzNames...))}}
	for n := 1 + g.intn(3); n > 0; n-- {
		l := gatewayv1.Listener{Name: gatewayv1.SectionName(g.str("http", "https", "tcp", "tls", "udp", "main")),
			Protocol: oneOf(g, gatewayv1.HTTPProtocolType, gatewayv1.HTTPSProtocolType, gatewayv1.TLSProtocolType, gatewayv1.TCPProtocolType, gatewayv1.UDPProtocolType, "Bad"),
			Port:     gatewayv1.PortNumber(oneOf(g, fuzzPorts...)), Hostname: maybePtr(g, gatewayv1.Hostname("a.example.com"), "*.example.com", "bad host")}
		if g.bool() {
			l.TLS = &gatewayv1.ListenerTLSConfig{Mode: maybePtr(g, gatewayv1.TLSModeTerminate, gatewayv1.TLSModePassthrough, "Bad"),
				CertificateRefs: []gatewayv1.SecretObjectReference{{Group: maybePtr(g, gatewayv1.Group(""), "other"), Kind: maybePtr(g, gatewayv1.Kind("Secret"), "Other"),
					Name: gatewayv1.ObjectName(g.str(fuzzNames...)), Namespace: maybePtr(g, gatewayv1.Namespace("default"), "other")}}}
		}
		if g.bool() {
			from := oneOf(g, gatewayv1.NamespacesFromAll, gatewayv1.NamespacesFromSame, gatewayv1.NamespacesFromSelector, "Bad")
			l.AllowedRoutes = &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: &from}}
			if from == gatewayv1.NamespacesFromSelector && g.bool() {
				l.AllowedRoutes.Namespaces.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": g.str("a", "b", "bad value!")}}
			}
			if g.bool() {
				l.AllowedRoutes.Kinds = []gatewayv1.RouteGroupKind{{Kind: gatewayv1.Kind(g.str("HTTPRoute", "GRPCRoute", "TCPRoute", "Other"))}}
			}
		}
		gw.Spec.Listeners = append(gw.Spec.Listeners, l)
	}
	return gw
}

func (g *objectGen) httpRoute() *gatewayv1.HTTPRoute {
	r := &gatewayv1.HTTPRoute{ObjectMeta: g.meta(true)}
	r.Spec.CommonRouteSpec, r.Spec.Hostnames = g.routeParents(), g.hostnames()
	for n := g.intn(3); n > 0; n-- {
		rule := gatewayv1.HTTPRouteRule{Name: g.sectionName()}
		for m := g.intn(3); m > 0; m-- {
			match := gatewayv1.HTTPRouteMatch{Method: maybePtr(g, gatewayv1.HTTPMethodGet, gatewayv1.HTTPMethodPost, "BAD")}
			if g.bool() {
				match.Path = &gatewayv1.HTTPPathMatch{Type: maybePtr(g, gatewayv1.PathMatchPathPrefix, gatewayv1.PathMatchExact, gatewayv1.PathMatchRegularExpression, "Bad"),
					Value: maybePtr(g, fuzzPaths...)}
			}
			if g.maybe(3) {
				match.Headers = []gatewayv1.HTTPHeaderMatch{{Type: maybePtr(g, gatewayv1.HeaderMatchExact, gatewayv1.HeaderMatchRegularExpression),
					Name: gatewayv1.HTTPHeaderName(g.str("x-a", "", "Host")), Value: g.str("1", "~*re(", "")}}
			}
			if g.maybe(4) {
				match.QueryParams = []gatewayv1.HTTPQueryParamMatch{{Type: maybePtr(g, gatewayv1.QueryParamMatchExact, gatewayv1.QueryParamMatchRegularExpression),
					Name: gatewayv1.HTTPHeaderName(g.str("q", "")), Value: g.str("1", "re(")}}
			}
			rule.Matches = append(rule.Matches, match)
		}
		for m := g.intn(3); m > 0; m-- {
			rule.Filters = append(rule.Filters, g.httpFilter())
		}
		for m := g.intn(3); m > 0; m-- {
			ref := gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{BackendObjectReference: g.backendObject(), Weight: maybePtr(g, int32(0), 1, 100)}}
			if g.maybe(4) {
				ref.Filters = []gatewayv1.HTTPRouteFilter{g.httpFilter()}
			}
			rule.BackendRefs = append(rule.BackendRefs, ref)
		}
		if g.maybe(4) {
			rule.Timeouts = &gatewayv1.HTTPRouteTimeouts{Request: maybePtr(g, gatewayv1.Duration("1s"), "0s", "bad"), BackendRequest: maybePtr(g, gatewayv1.Duration("500ms"), "2s")}
		}
		r.Spec.Rules = append(r.Spec.Rules, rule)
	}
	return r
}

func (g *objectGen) httpFilter() gatewayv1.HTTPRouteFilter {
	f := gatewayv1.HTTPRouteFilter{Type: oneOf(g, gatewayv1.HTTPRouteFilterRequestHeaderModifier, gatewayv1.HTTPRouteFilterResponseHeaderModifier,
		gatewayv1.HTTPRouteFilterRequestRedirect, gatewayv1.HTTPRouteFilterURLRewrite, gatewayv1.HTTPRouteFilterExtensionRef, gatewayv1.HTTPRouteFilterRequestMirror, "Bad")}
	headers := func() *gatewayv1.HTTPHeaderFilter {
		return &gatewayv1.HTTPHeaderFilter{Set: []gatewayv1.HTTPHeader{{Name: gatewayv1.HTTPHeaderName(g.str("x-a", "")), Value: g.str("1", "")}},
			Add: []gatewayv1.HTTPHeader{{Name: "x-b", Value: g.str("2")}}, Remove: []string{g.str("x-c", "")}}
	}
	pathMod := func() *gatewayv1.HTTPPathModifier {
		if g.bool() {
			return nil
		}
		return &gatewayv1.HTTPPathModifier{Type: oneOf(g, gatewayv1.FullPathHTTPPathModifier, gatewayv1.PrefixMatchHTTPPathModifier, "Bad"),
			ReplaceFullPath: maybePtr(g, fuzzPaths...), ReplacePrefixMatch: maybePtr(g, fuzzPaths...)}
	}
	switch f.Type {
	case gatewayv1.HTTPRouteFilterRequestHeaderModifier:
		f.RequestHeaderModifier = headers()
	case gatewayv1.HTTPRouteFilterResponseHeaderModifier:
		f.ResponseHeaderModifier = headers()
	case gatewayv1.HTTPRouteFilterRequestRedirect:
		f.RequestRedirect = &gatewayv1.HTTPRequestRedirectFilter{Scheme: maybePtr(g, "http", "https", "bad"), Hostname: maybePtr(g, gatewayv1.PreciseHostname("a.example.com"), "bad host"),
			Path: pathMod(), Port: maybePtr(g, gatewayv1.PortNumber(80), 0), StatusCode: maybePtr(g, 301, 302, 999)}
	case gatewayv1.HTTPRouteFilterURLRewrite:
		f.URLRewrite = &gatewayv1.HTTPURLRewriteFilter{Hostname: maybePtr(g, gatewayv1.PreciseHostname("a.example.com"), ""), Path: pathMod()}
	case gatewayv1.HTTPRouteFilterExtensionRef:
		f.ExtensionRef = &gatewayv1.LocalObjectReference{Group: gatewayv1.Group(g.str("configuration.konghq.com", "")), Kind: gatewayv1.Kind(g.str("KongPlugin", "Other")),
			Name: gatewayv1.ObjectName(g.str(fuzzNames...))}
	}
	return f
}

func (g *objectGen) grpcRoute() *gatewayv1.GRPCRoute {
	r := &gatewayv1.GRPCRoute{ObjectMeta: g.meta(true)}
	r.Spec.CommonRouteSpec, r.Spec.Hostnames = g.routeParents(), g.hostnames()
	for n := g.intn(3); n > 0; n-- {
		rule := gatewayv1.GRPCRouteRule{Name: g.sectionName()}
		for m := g.intn(3); m > 0; m-- {
			match := gatewayv1.GRPCRouteMatch{}
			if g.bool() {
				match.Method = &gatewayv1.GRPCMethodMatch{Type: maybePtr(g, gatewayv1.GRPCMethodMatchExact, gatewayv1.GRPCMethodMatchRegularExpression),
					Service: maybePtr(g, "svc.A", "", "re("), Method: maybePtr(g, "Get", "", "re(")}
			}
			if g.maybe(3) {
				match.Headers = []gatewayv1.GRPCHeaderMatch{{Type: maybePtr(g, gatewayv1.GRPCHeaderMatchExact, gatewayv1.GRPCHeaderMatchRegularExpression),
					Name: gatewayv1.GRPCHeaderName(g.str("x-a", "")), Value: g.str("1", "re(")}}
			}
			rule.Matches = append(rule.Matches, match)
		}
		if g.maybe(3) {
			rule.Filters = []gatewayv1.GRPCRouteFilter{{Type: oneOf(g, gatewayv1.GRPCRouteFilterRequestHeaderModifier, gatewayv1.GRPCRouteFilterExtensionRef, "Bad"),
				RequestHeaderModifier: &gatewayv1.HTTPHeaderFilter{Set: []gatewayv1.HTTPHeader{{Name: "x-a", Value: "1"}}},
				ExtensionRef:          &gatewayv1.LocalObjectReference{Group: "configuration.konghq.com", Kind: "KongPlugin", Name: gatewayv1.ObjectName(g.str(fuzzNames...))}}}
		}
		for _, ref := range g.backendRefs() {
			rule.BackendRefs = append(rule.BackendRefs, gatewayv1.GRPCBackendRef{BackendRef: ref})
		}
		r.Spec.Rules = append(r.Spec.Rules, rule)
	}
	return r
}

// l4Route is a TCPRoute (kind 0), TLSRoute (1) or UDPRoute (2).
func (g *objectGen) l4Route(kind int) client.Object {
	switch kind {
	case 0:
		return &gatewayv1.TCPRoute{ObjectMeta: g.meta(true), Spec: gatewayv1.TCPRouteSpec{
			CommonRouteSpec: g.routeParents(), Rules: []gatewayv1.TCPRouteRule{{Name: g.sectionName(), BackendRefs: g.backendRefs()}}}}
	case 1:
		return &gatewayv1.TLSRoute{ObjectMeta: g.meta(true), Spec: gatewayv1.TLSRouteSpec{
			CommonRouteSpec: g.routeParents(), Hostnames: g.hostnames(),
			Rules: []gatewayv1.TLSRouteRule{{Name: g.sectionName(), BackendRefs: g.backendRefs()}}}}
	default:
		return &gatewayv1.UDPRoute{ObjectMeta: g.meta(true), Spec: gatewayv1.UDPRouteSpec{
			CommonRouteSpec: g.routeParents(), Rules: []gatewayv1.UDPRouteRule{{Name: g.sectionName(), BackendRefs: g.backendRefs()}}}}
	}
}

func (g *objectGen) referenceGrant() *gatewayv1beta1.ReferenceGrant {
	rg := &gatewayv1beta1.ReferenceGrant{ObjectMeta: g.meta(true)}
	rg.Spec.From = []gatewayv1.ReferenceGrantFrom{{Group: gatewayv1.Group(g.str(gatewayv1.GroupName, "", "configuration.konghq.com")),
		Kind: gatewayv1.Kind(g.str("HTTPRoute", "GRPCRoute", "TCPRoute", "TLSRoute", "UDPRoute", "Gateway", "KongPlugin", "KongConsumer")), Namespace: gatewayv1.Namespace(g.str(fuzzNamespaces...))}}
	rg.Spec.To = []gatewayv1.ReferenceGrantTo{{Group: gatewayv1.Group(g.str("", "configuration.konghq.com", "incubator.ingress-controller.konghq.com")),
		Kind: gatewayv1.Kind(g.str("Service", "Secret", "KongPlugin", "KongServiceFacade")), Name: maybePtr(g, gatewayv1.ObjectName("a"), "b")}}
	return rg
}

func (g *objectGen) backendTLSPolicy() *gatewayv1.BackendTLSPolicy {
	p := &gatewayv1.BackendTLSPolicy{ObjectMeta: g.meta(true)}
	p.Spec.TargetRefs = []gatewayv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gatewayv1.LocalPolicyTargetReference{
		Group: gatewayv1.Group(g.str("", "other")), Kind: gatewayv1.Kind(g.str("Service", "Other")), Name: gatewayv1.ObjectName(g.str(fuzzNames...))},
		SectionName: maybePtr(g, gatewayv1.SectionName("http"), "https", "")}}
	p.Spec.Validation = gatewayv1.BackendTLSPolicyValidation{Hostname: gatewayv1.PreciseHostname(g.str("a.example.com", "", "bad host")),
		WellKnownCACertificates: maybePtr(g, gatewayv1.WellKnownCACertificatesSystem, "Bad")}
	for n := g.intn(3); n > 0; n-- {
		p.Spec.Validation.CACertificateRefs = append(p.Spec.Validation.CACertificateRefs, gatewayv1.LocalObjectReference{
			Group: gatewayv1.Group(g.str("", "other")), Kind: gatewayv1.Kind(g.str("ConfigMap", "Secret", "Other")), Name: gatewayv1.ObjectName(g.str(fuzzNames...))})
	}
	if g.maybe(3) {
		p.Spec.Validation.SubjectAltNames = []gatewayv1.SubjectAltName{{Type: oneOf(g, gatewayv1.HostnameSubjectAltNameType, gatewayv1.URISubjectAltNameType, "Bad"),
			Hostname: gatewayv1.Hostname(g.str("a.example.com", "")), URI: gatewayv1.AbsoluteURI(g.str("spiffe://a/b", ""))}}
	}
	return p
}

// edit returns a copy of s in which a few Ingresses, Services, EndpointSlices, Gateway API
// routes, KongConsumers, Secrets and plugins are new versions, added or removed, and a few
// Ingresses' konghq.com/plugins changed: the changes Incremental translates locally.
func (g *objectGen) edit(s *store.Snapshot) *store.Snapshot {
	c := *s
	c.Ingresses = append([]*netv1.Ingress(nil), s.Ingresses...)
	c.Services = append([]*corev1.Service(nil), s.Services...)
	c.EndpointSlices = append([]*discoveryv1.EndpointSlice(nil), s.EndpointSlices...)
	for n := 1 + g.intn(3); n > 0; n-- {
		switch g.intn(6) {
		case 0:
			c.Ingresses = append(c.Ingresses, g.ingress())
		case 1:
			if len(c.Ingresses) > 0 {
				i := g.intn(len(c.Ingresses))
				n := g.ingress()
				n.ObjectMeta = *c.Ingresses[i].ObjectMeta.DeepCopy()
				n.ResourceVersion = g.version()
				n.Generation++ // a change to the spec, as the API server counts it
				c.Ingresses[i] = n
			}
		case 2:
			if len(c.Ingresses) > 0 {
				i := g.intn(len(c.Ingresses))
				c.Ingresses = append(c.Ingresses[:i:i], c.Ingresses[i+1:]...)
			}
		case 3:
			c.Services = append(c.Services, g.service())
		case 4:
			if len(c.Services) > 0 {
				i := g.intn(len(c.Services))
				n := g.service()
				n.ObjectMeta = *c.Services[i].ObjectMeta.DeepCopy()
				n.ResourceVersion = g.version()
				n.Generation++ // a change to the spec, as the API server counts it
				c.Services[i] = n
			}
		default:
			c.EndpointSlices = append(c.EndpointSlices, g.endpointSlice())
		}
	}
	// HTTPRoutes, read after the rest so that a saved input still builds the snapshot and
	// the edits above it built before.
	c.HTTPRoutes = append([]*gatewayv1.HTTPRoute(nil), s.HTTPRoutes...)
	for n := g.intn(3); n > 0; n-- {
		switch g.intn(3) {
		case 0:
			c.HTTPRoutes = append(c.HTTPRoutes, g.httpRoute())
		case 1:
			if len(c.HTTPRoutes) > 0 {
				i := g.intn(len(c.HTTPRoutes))
				n := g.httpRoute()
				n.ObjectMeta = *c.HTTPRoutes[i].ObjectMeta.DeepCopy()
				n.ResourceVersion = g.version()
				n.Generation++
				c.HTTPRoutes[i] = n
			}
		default:
			if len(c.HTTPRoutes) > 0 {
				i := g.intn(len(c.HTTPRoutes))
				c.HTTPRoutes = append(c.HTTPRoutes[:i:i], c.HTTPRoutes[i+1:]...)
			}
		}
	}
	// KongConsumers and Secrets (credentials), read after the rest for the same reason.
	c.KongConsumers = append([]*kongv1.KongConsumer(nil), s.KongConsumers...)
	c.Secrets = append([]*corev1.Secret(nil), s.Secrets...)
	for n := g.intn(3); n > 0; n-- {
		switch g.intn(6) {
		case 5:
			// A TLS Secret rotated: the same Secret, another pair (or half of one).
			if len(c.Secrets) > 0 {
				i := g.intn(len(c.Secrets))
				n := c.Secrets[i].DeepCopy()
				n.ResourceVersion = g.version()
				pair := oneOf(g, g.cert, g.rotated)
				n.Data = map[string][]byte{corev1.TLSCertKey: []byte(pair.cert), corev1.TLSPrivateKeyKey: []byte(oneOf(g, pair.key, g.cert.key, ""))}
				c.Secrets[i] = n
			}
		case 0:
			c.KongConsumers = append(c.KongConsumers, g.kongConsumer())
		case 1:
			if len(c.KongConsumers) > 0 {
				i := g.intn(len(c.KongConsumers))
				n := g.kongConsumer()
				n.ObjectMeta = *c.KongConsumers[i].ObjectMeta.DeepCopy()
				n.ResourceVersion = g.version()
				n.Generation++
				c.KongConsumers[i] = n
			}
		case 2:
			if len(c.KongConsumers) > 0 {
				i := g.intn(len(c.KongConsumers))
				c.KongConsumers = append(c.KongConsumers[:i:i], c.KongConsumers[i+1:]...)
			}
		case 3:
			c.Secrets = append(c.Secrets, g.secret())
		default:
			if len(c.Secrets) > 0 {
				i := g.intn(len(c.Secrets))
				if g.bool() {
					c.Secrets = append(c.Secrets[:i:i], c.Secrets[i+1:]...)
				} else {
					n := g.secret()
					n.ObjectMeta = *c.Secrets[i].ObjectMeta.DeepCopy()
					n.ResourceVersion = g.version()
					c.Secrets[i] = n
				}
			}
		}
	}
	// GRPCRoutes and L4 routes, read after the HTTPRoutes for the same reason: added, a new
	// version (parentRefs, hostnames, rules, backends: all the generator's) or deleted.
	c.GRPCRoutes = append([]*gatewayv1.GRPCRoute(nil), s.GRPCRoutes...)
	c.TCPRoutes = append([]*gatewayv1.TCPRoute(nil), s.TCPRoutes...)
	c.TLSRoutes = append([]*gatewayv1.TLSRoute(nil), s.TLSRoutes...)
	c.UDPRoutes = append([]*gatewayv1.UDPRoute(nil), s.UDPRoutes...)
	for n := g.intn(3); n > 0; n-- {
		kind, op := g.intn(4), g.intn(3)
		route := func() client.Object {
			if kind == 3 {
				return g.grpcRoute()
			}
			return g.l4Route(kind)
		}
		switch kind {
		case 0:
			editRouteList(g, &c.TCPRoutes, op, route)
		case 1:
			editRouteList(g, &c.TLSRoutes, op, route)
		case 2:
			editRouteList(g, &c.UDPRoutes, op, route)
		default:
			editRouteList(g, &c.GRPCRoutes, op, route)
		}
	}
	// KongPlugins and KongClusterPlugins, read after the rest for the same reason: added, a
	// new version (every field the generator's, or the configuration, enabled and run_on
	// only: the changes spliced) or deleted.
	c.KongPlugins = append([]*kongv1.KongPlugin(nil), s.KongPlugins...)
	c.KongClusterPlugins = append([]*kongv1.KongClusterPlugin(nil), s.KongClusterPlugins...)
	for n := g.intn(3); n > 0; n-- {
		cluster, op := g.bool(), g.intn(4)
		switch {
		case op == 3 && cluster:
			reconfigure(g, c.KongClusterPlugins, func(p *kongv1.KongClusterPlugin) (*apiextensionsv1.JSON, *bool, *string) {
				return &p.Config, &p.Disabled, &p.RunOn
			})
		case op == 3:
			reconfigure(g, c.KongPlugins, func(p *kongv1.KongPlugin) (*apiextensionsv1.JSON, *bool, *string) {
				return &p.Config, &p.Disabled, &p.RunOn
			})
		case cluster:
			editRouteList(g, &c.KongClusterPlugins, op, func() client.Object { return g.kongClusterPlugin() })
		default:
			editRouteList(g, &c.KongPlugins, op, func() client.Object { return g.kongPlugin() })
		}
	}
	// An Ingress's konghq.com/plugins set (plugins of the pools' names, of another
	// namespace, twice, listed with others) or removed, the commonest edit of plugins, read
	// after the rest for the same reason.
	for n := g.intn(3); n > 0 && len(c.Ingresses) > 0; n-- {
		i := g.intn(len(c.Ingresses))
		ing := c.Ingresses[i].DeepCopy()
		ing.ResourceVersion = g.version()
		ing.Generation++
		if ing.Annotations == nil {
			ing.Annotations = map[string]string{}
		}
		if g.maybe(4) {
			delete(ing.Annotations, annPlugins)
		} else {
			ing.Annotations[annPlugins] = g.str("a", "b", "c", "a,b", "b,a", "a,a", "other:a", "default:b", "c,a,b", "")
		}
		c.Ingresses[i] = ing
	}
	unique(&c)
	return &c
}

// reconfigure replaces one plugin of list by a new version with only its configuration,
// enabled and run_on (fields gives them) generated anew.
func reconfigure[T client.Object](g *objectGen, list []T, fields func(T) (*apiextensionsv1.JSON, *bool, *string)) {
	if len(list) == 0 {
		return
	}
	i := g.intn(len(list))
	p := list[i].DeepCopyObject().(T)
	config, disabled, runOn := fields(p)
	*config, *disabled, *runOn = g.json(fuzzPluginConfigs...), g.maybe(3), g.str("", "first")
	p.SetResourceVersion(g.version())
	p.SetGeneration(p.GetGeneration() + 1)
	list[i] = p
}

// editRouteList adds a route (or another object route makes) to list (op 0), replaces one by
// a new version (1: a new object with the old one's metadata, a new resourceVersion and
// generation) or deletes one.
func editRouteList[T client.Object](g *objectGen, list *[]T, op int, route func() client.Object) {
	switch {
	case op == 0:
		*list = append(*list, route().(T))
	case len(*list) == 0:
	case op == 1:
		i := g.intn(len(*list))
		n := route().(T)
		old := reflect.ValueOf((*list)[i]).Elem().FieldByName("ObjectMeta").Interface().(metav1.ObjectMeta)
		reflect.ValueOf(n).Elem().FieldByName("ObjectMeta").Set(reflect.ValueOf(*old.DeepCopy()))
		n.SetResourceVersion(g.version())
		n.SetGeneration(n.GetGeneration() + 1)
		(*list)[i] = n
	default:
		i := g.intn(len(*list))
		*list = append((*list)[:i:i], (*list)[i+1:]...)
	}
}

// describe names the snapshot's objects, for a failure's message.
func describe(s *store.Snapshot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "class %q default %v params %v; ", s.IngressClass, s.IngressClassIsDefault, s.IngressClassParameters != nil)
	fmt.Fprintf(&b, "%d Ingresses, %d Services, %d EndpointSlices, %d Secrets, %d KongPlugins, %d KongClusterPlugins, %d Gateways, %d HTTPRoutes",
		len(s.Ingresses), len(s.Services), len(s.EndpointSlices), len(s.Secrets), len(s.KongPlugins), len(s.KongClusterPlugins), len(s.Gateways), len(s.HTTPRoutes))
	return b.String()
}

// options are the translator's options, switched by the input.
func (g *objectGen) options() Options {
	bits := g.byte()
	opts := Options{
		ExpressionRoutes: bits&1 != 0, EnableLegacyRegexDetection: bits&2 != 0, ServiceUpstream: bits&4 != 0, KongServiceFacade: bits&8 != 0,
		RewriteURIs: bits&16 != 0, EnableDrainSupport: bits&32 != 0, GatewayAlpha: bits&64 != 0, Enterprise: bits&128 != 0,
	}
	more := g.byte()
	opts.NoCustomEntities = more&1 != 0
	if more&2 != 0 {
		opts.Workspace = "ws"
	}
	if more&4 != 0 {
		opts.ClusterDomain = "cluster.local"
	}
	if more&8 != 0 {
		opts.KongVersion = semver.MustParse("3.11.0")
	}
	if more&16 != 0 {
		opts.Now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if more&32 != 0 {
		opts.GatewayControllerName = "example.com/other"
	}
	opts.CombinedServicesFromDifferentHTTPRoutes = more&64 != 0
	opts.EntitySchemas = map[string]EntitySchemaAnswer{
		"degraphql_routes": {Schema: map[string]any{"fields": []any{
			map[string]any{"uri": map[string]any{"type": "string"}},
			map[string]any{"query": map[string]any{"type": "string"}},
			map[string]any{"service": map[string]any{"type": "foreign", "reference": "services"}},
		}}},
		"bad type": {Error: "no such entity"},
	}
	return opts
}

// unique keeps the first object of each namespace and name in every object list of s: the
// API server holds one object per name.
func unique(s *store.Snapshot) {
	v := reflect.ValueOf(s).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if f.Kind() != reflect.Slice || f.Len() == 0 {
			continue
		}
		if _, ok := f.Index(0).Interface().(client.Object); !ok {
			continue
		}
		seen := map[nsName]bool{}
		out := reflect.MakeSlice(f.Type(), 0, f.Len())
		for j := 0; j < f.Len(); j++ {
			o := f.Index(j).Interface().(client.Object)
			if k := keyOf(o); !seen[k] {
				seen[k] = true
				out = reflect.Append(out, f.Index(j))
			}
		}
		f.Set(out)
	}
}
