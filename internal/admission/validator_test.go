package admission

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// cluster is what the cache holds in every case below: an IngressClass "kong" (not the
// default), an app (Service, EndpointSlice, Ingress), a rate-limiting KongPlugin whose
// config comes from a Secret, an unknown plugin, two consumers with key-auth credentials and
// a vault; a Gateway of konductor's class with an HTTPRoute, and a Service in namespace
// "other" that a ReferenceGrant opens to HTTPRoutes of "default".
const cluster = `
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: kong}
spec: {controller: ingress-controllers.konghq.com/kong}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec: {ports: [{port: 80, targetPort: 8080}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: default, creationTimestamp: "2024-01-01T00:00:00Z"}
spec:
  ingressClassName: kong
  rules:
  - host: web.example.com
    http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: broken, namespace: default, creationTimestamp: "2024-01-01T00:00:00Z"}
spec:
  ingressClassName: kong
  rules:
  - host: broken.example.com
    http: {paths: [{path: "/~/(", pathType: ImplementationSpecific, backend: {service: {name: web, port: {number: 80}}}}]}
---
apiVersion: v1
kind: Secret
metadata: {name: limits, namespace: default}
stringData: {config: '{"minute": 10, "policy": "local"}'}
---
apiVersion: v1
kind: Secret
metadata: {name: echoed, namespace: default}
stringData: {config: '{"echo": "hunter2-value"}'}
---
apiVersion: configuration.konghq.com/v1
kind: KongPlugin
metadata: {name: limit, namespace: default}
plugin: rate-limiting
configFrom: {secretKeyRef: {name: limits, key: config}}
---
apiVersion: v1
kind: Secret
metadata: {name: alice-key, namespace: default, labels: {konghq.com/credential: key-auth}}
stringData: {key: alice-secret}
---
apiVersion: v1
kind: Secret
metadata: {name: bob-key, namespace: default, labels: {konghq.com/credential: key-auth}}
stringData: {key: bob-secret}
---
apiVersion: configuration.konghq.com/v1
kind: KongConsumer
metadata: {name: alice, namespace: default, creationTimestamp: "2024-01-01T00:00:00Z", annotations: {kubernetes.io/ingress.class: kong}}
username: alice
credentials: [alice-key]
---
apiVersion: configuration.konghq.com/v1
kind: KongConsumer
metadata: {name: bob, namespace: default, creationTimestamp: "2024-01-02T00:00:00Z", annotations: {kubernetes.io/ingress.class: kong}}
username: bob
credentials: [bob-key]
---
apiVersion: configuration.konghq.com/v1alpha1
kind: KongVault
metadata: {name: env, creationTimestamp: "2024-01-01T00:00:00Z", annotations: {kubernetes.io/ingress.class: kong}}
spec: {backend: env, prefix: env-secrets}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: kong}
spec: {controllerName: konghq.com/kic-gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: theirs}
spec: {controllerName: example.com/theirs}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: kong, namespace: default}
spec: {gatewayClassName: kong, listeners: [{name: http, protocol: HTTP, port: 80}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: theirs, namespace: default}
spec: {gatewayClassName: theirs, listeners: [{name: http, protocol: HTTP, port: 80}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: site, namespace: default, creationTimestamp: "2024-01-01T00:00:00Z"}
spec:
  parentRefs: [{name: kong}]
  hostnames: [site.example.com]
  rules: [{matches: [{path: {type: PathPrefix, value: /}}], backendRefs: [{name: web, port: 80}]}]
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: other}
spec: {ports: [{port: 80, targetPort: 8080}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: uses-other, namespace: default, creationTimestamp: "2024-01-01T00:00:00Z"}
spec:
  parentRefs: [{name: kong}]
  hostnames: [other.example.com]
  rules: [{matches: [{path: {type: PathPrefix, value: /}}], backendRefs: [{name: api, namespace: other, port: 80}]}]
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: from-default, namespace: other}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: default}]
  to: [{group: "", kind: Service, name: api}]
`

func newValidator(t testing.TB, synced bool, gw GatewaySchemas) *Validator {
	t.Helper()
	st, err := store.NewForObjects(objects(t, cluster), store.Options{IngressClass: "kong", Namespaces: []string{"default", "other"}})
	require.NoError(t, err)
	opts := Options{Source: st, Namespaces: []string{"default", "other"}, Synced: func() bool { return synced },
		Now: func() time.Time { return time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC) }}
	if gw != nil {
		opts.Gateways = gw
	}
	return NewValidator(opts)
}

func TestReview(t *testing.T) {
	for _, tc := range []struct {
		name     string
		op       admissionv1.Operation // default Create
		object   string
		notSync  bool
		gateway  *fakeGateway
		denied   []string // every one is in the message; nil: allowed
		warnings []string // every one is in some warning
		never    []string // none is anywhere in the answer (Secret values)
	}{
		{name: "a change that affects another namespace's objects says how many, not which",
			op: admissionv1.Update,
			object: `
apiVersion: v1
kind: Service
metadata: {name: api, namespace: other, annotations: {konghq.com/plugins: not-yet}}
spec: {ports: [{port: 80, targetPort: 8080}]}`,
			warnings: []string{"Service other/api:", "affects 1 object(s) of other namespaces"}, never: []string{"uses-other", "default/"}},
		{name: "a configFrom Secret that does not parse is denied without quoting it",
			op: admissionv1.Update,
			object: `
apiVersion: v1
kind: Secret
metadata: {name: limits, namespace: default}
stringData: {config: 'minute: *s3cretAnchor'}`,
			denied: []string{"KongPlugin default/limit: configFrom:", "not valid YAML or JSON"}, never: []string{"s3cretAnchor"}},
		{name: "a gateway's refusal that quotes a configFrom Secret's value is redacted",
			object:  plugin("echoing", "my-plugin", "null") + "\nconfigFrom: {secretKeyRef: {name: echoed, key: config}}",
			gateway: &fakeGateway{}, denied: []string{"KongPlugin default/echoing: config:", "[redacted]"}, never: []string{"hunter2-value"}},
		{name: "ingress with a path regex Kong refuses is denied, naming the field",
			object: ingress("bad", "kong", "bad.example.com", "/~/api/(v1", "ImplementationSpecific"),
			denied: []string{"Ingress default/bad: spec.rules[0].http.paths[0].path:", "invalid regex", "missing closing parenthesis"}},
		{name: "ingress with a host Kong refuses is denied",
			object: ingress("bad-host", "kong", "*.*.example.com", "/", "Prefix"),
			denied: []string{"Ingress default/bad-host: spec.rules[0].host:"}},
		{name: "good ingress is allowed",
			object: ingress("good", "kong", "good.example.com", "/api", "Prefix")},
		{name: "ingress of another class is allowed untouched",
			object: ingress("theirs", "nginx", "x.example.com", "/api/(v1", "ImplementationSpecific")},
		{name: "ingress in a namespace not watched is allowed untouched",
			object: strings.Replace(ingress("elsewhere", "kong", "x.example.com", "/~/(", "ImplementationSpecific"), "namespace: default", "namespace: kube-system", 1)},
		{name: "update that keeps a problem the stored object already has is allowed",
			op:     admissionv1.Update,
			object: strings.Replace(ingress("broken", "kong", "broken.example.com", "/~/(", "ImplementationSpecific"), "name: broken,", "name: broken, labels: {touched: 'yes'},", 1)},
		{name: "update that fixes a problem is allowed",
			op:     admissionv1.Update,
			object: ingress("broken", "kong", "broken.example.com", "/ok", "Prefix")},
		{name: "before the cache synced, a bad ingress is allowed with a warning",
			notSync: true, object: ingress("bad", "kong", "bad.example.com", "/~/(", "ImplementationSpecific"),
			warnings: []string{"not checked"}},
		{name: "delete is never judged",
			op: admissionv1.Delete, object: ingress("bad", "kong", "bad.example.com", "/~/(", "ImplementationSpecific")},

		{name: "KongPlugin with a config Kong's schema refuses is denied, naming the field",
			object: plugin("limit2", "rate-limiting", `{minute: "often"}`),
			denied: []string{"KongPlugin default/limit2: config.minute:", `plugin "rate-limiting" failed schema validation`}},
		{name: "KongPlugin with a valid config is allowed",
			object: plugin("limit2", "rate-limiting", `{minute: 5}`)},
		{name: "KongPlugin with both config and configFrom is denied",
			object: plugin("limit2", "rate-limiting", `{minute: 5}`) + "\nconfigFrom: {secretKeyRef: {name: limits, key: config}}",
			denied: []string{"KongPlugin default/limit2: configFrom:", "both Config and ConfigFrom"}},
		{name: "unknown plugin refused by a gateway is denied with Kong's message",
			object: plugin("custom", "my-plugin", `{bad: 1}`), gateway: &fakeGateway{},
			denied: []string{"KongPlugin default/custom: config:", "config.bad: unknown field"}},
		{name: "unknown plugin accepted by a gateway is allowed",
			object: plugin("custom", "my-plugin", `{good: 1}`), gateway: &fakeGateway{}},
		{name: "unknown plugin with no gateway reachable is allowed with a warning",
			object: plugin("custom", "my-plugin", `{bad: 1}`), gateway: &fakeGateway{down: true},
			warnings: []string{`plugin "my-plugin" is not known to konductor and no gateway could check it`}},
		{name: "unknown plugin with no gateway configured is allowed with a warning",
			object:   plugin("custom", "my-plugin", `{bad: 1}`),
			warnings: []string{"no gateway is configured"}},

		{name: "Secret change that makes a plugin's configFrom invalid is denied, naming the plugin",
			op: admissionv1.Update, object: secret("limits", "", `config: '{"minute": "often", "policy": "local"}'`),
			denied: []string{"KongPlugin default/limit: config.minute:"}},
		{name: "Secret change that keeps a plugin's configFrom valid is allowed",
			op: admissionv1.Update, object: secret("limits", "", `config: '{"minute": 20, "policy": "local"}'`)},
		{name: "Secret change that gives a consumer a credential another holds is denied",
			op: admissionv1.Update, object: secret("bob-key", "key-auth", "key: alice-secret"),
			denied: []string{"KongConsumer default/bob: credentials:", "Secret default/bob-key:", "conflicting credential"}},
		{name: "an update that takes a username another consumer holds is denied, naming the one that loses it",
			op: admissionv1.Update, object: `
apiVersion: configuration.konghq.com/v1
kind: KongConsumer
metadata: {name: alice, namespace: default, creationTimestamp: "2024-01-01T00:00:00Z", annotations: {kubernetes.io/ingress.class: kong}}
username: bob
credentials: [alice-key]`,
			denied: []string{"KongConsumer default/bob: username:", "already KongConsumer default/alice's"}},
		{name: "Secret that nothing reads is allowed",
			object: secret("unrelated", "", "anything: at-all")},

		{name: "KongVault with a prefix another vault has is denied",
			object: `
apiVersion: configuration.konghq.com/v1alpha1
kind: KongVault
metadata: {name: env2, annotations: {kubernetes.io/ingress.class: kong}}
spec: {backend: env, prefix: env-secrets}`,
			denied: []string{"KongVault env2: spec.prefix:", `"env-secrets" is duplicate`}},

		{name: "KongIngress is allowed with KIC's deprecation warnings",
			object: `
apiVersion: configuration.konghq.com/v1
kind: KongIngress
metadata: {name: old, namespace: default}
proxy: {retries: 3}
upstream: {slots: 100}`,
			warnings: []string{warnKongIngressProxy, warnKongIngressUpstream}},
		{name: "Service with konghq.com/override is allowed with KIC's deprecation warning",
			object: `
apiVersion: v1
kind: Service
metadata: {name: web2, namespace: default, annotations: {konghq.com/override: old}}
spec: {ports: [{port: 80}]}`,
			warnings: []string{warnServiceOverride}},
		{name: "TCPIngress is allowed with a deprecation warning",
			object: `
apiVersion: configuration.konghq.com/v1beta1
kind: TCPIngress
metadata: {name: tcp, namespace: default, annotations: {kubernetes.io/ingress.class: kong}}
spec: {rules: [{port: 9000, backend: {serviceName: tcp, servicePort: 9000}}]}`,
			warnings: []string{"TCPIngress is deprecated", "Service default/tcp not found"}},

		{name: "HTTPRoute with a filter Kong cannot express is denied, naming the field",
			object: httpRoute("mirror", "kong", "/api", `
    filters: [{type: RequestMirror, requestMirror: {backendRef: {name: web, port: 80}}}]`),
			denied: []string{"HTTPRoute default/mirror: spec.rules[0].filters:", "httpFilter RequestMirror unsupported"}},
		{name: "HTTPRoute with a path regex Kong refuses is denied, naming the match",
			object: strings.Replace(httpRoute("regex", "kong", "/api/(v1", ""), "PathPrefix", "RegularExpression", 1),
			denied: []string{"HTTPRoute default/regex: spec.rules[0].matches[0].path:"}},
		{name: "HTTPRoute with a backendRef of a kind Kong cannot serve is denied",
			object: strings.Replace(httpRoute("bucket", "kong", "/files", ""), "{name: web, port: 80}", "{group: storage.example.com, kind: Bucket, name: files}", 1),
			denied: []string{"HTTPRoute default/bucket: spec.rules[0].backendRefs[0]:", `unsupported kind "Bucket"`}},
		{name: "good HTTPRoute is allowed",
			object: httpRoute("good", "kong", "/api", `
    filters: [{type: RequestHeaderModifier, requestHeaderModifier: {add: [{name: x-from, value: konductor}]}}]`)},
		{name: "update of an HTTPRoute that keeps it good is allowed",
			op:     admissionv1.Update,
			object: strings.Replace(httpRoute("site", "kong", "/", ""), "hostnames: [good.example.com]", "hostnames: [site.example.com, www.example.com]", 1)},
		{name: "HTTPRoute of another controller's Gateway is allowed untouched",
			object: httpRoute("theirs", "theirs", "/api", `
    filters: [{type: RequestMirror, requestMirror: {backendRef: {name: web, port: 80}}}]`)},
		{name: "HTTPRoute to a Service of another namespace that a ReferenceGrant permits is allowed",
			object: strings.Replace(httpRoute("cross", "kong", "/api", ""), "{name: web, port: 80}", "{name: api, namespace: other, port: 80}", 1)},
		{name: "HTTPRoute to a Service of another namespace that no ReferenceGrant permits yet is allowed with a warning",
			object:   strings.Replace(httpRoute("cross", "kong", "/api", ""), "{name: web, port: 80}", "{name: web, namespace: other, port: 80}", 1),
			warnings: []string{"HTTPRoute default/cross: spec.rules[0].backendRefs[0]:", "not permitted by any ReferenceGrant"}},
		{name: "HTTPRoute created before its Service is allowed with a warning",
			object:   strings.Replace(httpRoute("early", "kong", "/api", ""), "{name: web, port: 80}", "{name: later, port: 80}", 1),
			warnings: []string{"HTTPRoute default/early:", "Service default/later not found"}},
		{name: "Gateway change that leaves an attached HTTPRoute unaccepted is allowed with a warning on the route",
			op: admissionv1.Update,
			object: `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: kong, namespace: default}
spec: {gatewayClassName: kong, listeners: [{name: http, protocol: HTTP, port: 80, hostname: elsewhere.example.com}]}`,
			warnings: []string{"HTTPRoute default/site: spec.parentRefs[0]:", "not accepted by Gateway default/kong"}},

		{name: "ingress created before its Service is allowed with a warning: order of creation does not matter",
			object:   strings.Replace(ingress("first", "kong", "first.example.com", "/", "Prefix"), "name: web, port", "name: later, port", 1),
			warnings: []string{"Ingress default/first:", "Service default/later not found"}},
		{name: "KongConsumer created before its credential Secret is allowed with a warning",
			object: `
apiVersion: configuration.konghq.com/v1
kind: KongConsumer
metadata: {name: carol, namespace: default, annotations: {kubernetes.io/ingress.class: kong}}
username: carol
credentials: [carol-key]`,
			warnings: []string{"KongConsumer default/carol:", "carol-key not found"}},
		{name: "KongPlugin created before the Secret of its configFrom is allowed with a warning",
			object:   plugin("later", "rate-limiting", "null") + "\nconfigFrom: {secretKeyRef: {name: later, key: config}}",
			warnings: []string{"KongPlugin default/later: configFrom:", "secret default/later not found"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var gw GatewaySchemas
			if tc.gateway != nil {
				gw = tc.gateway
			}
			v := newValidator(t, !tc.notSync, gw)
			obj := objects(t, tc.object)[0]
			op := tc.op
			if op == "" {
				op = admissionv1.Create
			}
			resp := v.Review(context.Background(), request(t, kindFor(t, obj), op, obj))
			require.Equal(t, "uid-"+obj.GetName(), string(resp.UID))
			if tc.denied == nil {
				msg := ""
				if resp.Result != nil {
					msg = resp.Result.Message
				}
				require.True(t, resp.Allowed, "denied: %s", msg)
			} else {
				require.False(t, resp.Allowed, "allowed")
				require.Equal(t, metav1.StatusReasonInvalid, resp.Result.Reason)
				for _, want := range tc.denied {
					require.Contains(t, resp.Result.Message, want)
				}
			}
			all := strings.Join(resp.Warnings, "\n")
			for _, want := range tc.warnings {
				require.Contains(t, all, want)
			}
			for _, secret := range tc.never {
				require.NotContains(t, all, secret)
				if resp.Result != nil {
					require.NotContains(t, resp.Result.Message, secret)
				}
			}
			if len(tc.warnings) == 0 {
				require.Empty(t, resp.Warnings)
			}
		})
	}
}

// Resources konductor does not translate (Gateway API routes other than HTTPRoute) are
// allowed without a look.
func TestReviewOfOtherResourcesIsAllowed(t *testing.T) {
	v := newValidator(t, true, nil)
	req := &admissionv1.AdmissionRequest{UID: "u", Operation: admissionv1.Create,
		Resource: metav1.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "grpcroutes"}}
	resp := v.Review(context.Background(), req)
	require.True(t, resp.Allowed)
	require.Empty(t, resp.Warnings)
}

func ingress(name, class, host, path, pathType string) string {
	return `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ` + name + `, namespace: default}
spec:
  ingressClassName: ` + class + `
  rules:
  - host: "` + host + `"
    http: {paths: [{path: "` + path + `", pathType: ` + pathType + `, backend: {service: {name: web, port: {number: 80}}}}]}`
}

func plugin(name, pluginName, config string) string {
	return `
apiVersion: configuration.konghq.com/v1
kind: KongPlugin
metadata: {name: ` + name + `, namespace: default}
plugin: ` + pluginName + `
config: ` + config
}

func secret(name, credential, data string) string {
	labels := ""
	if credential != "" {
		labels = ", labels: {konghq.com/credential: " + credential + "}"
	}
	return `
apiVersion: v1
kind: Secret
metadata: {name: ` + name + `, namespace: default` + labels + `}
stringData: {` + data + `}`
}

// httpRoute is an HTTPRoute of Gateway gateway (in default) with one rule: a PathPrefix match
// on path, to Service web, with rest appended to the rule.
func httpRoute(name, gateway, path, rest string) string {
	return `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: ` + name + `, namespace: default}
spec:
  parentRefs: [{name: ` + gateway + `}]
  hostnames: [good.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: "` + path + `"}}]
    backendRefs: [{name: web, port: 80}]` + rest
}

// The webhook checks regexes as the gateways' router compiles them (Options.TranslatorOptions,
// the sync loop's settings): under traditional_compatible and expressions (RustRegexes) a
// regex Rust's crate refuses, which the sync loop leaves out, is denied, naming the object
// and field; under the traditional router (PCRE), and before any gateway said its router,
// the same regex is valid and allowed.
func TestReviewChecksRegexesUnderTheGatewaysRouter(t *testing.T) {
	braces := ingress("braces", "kong", "braces.example.com", "/~/v1/{id}", "ImplementationSpecific")
	lookahead := ingress("lookahead", "kong", "lookahead.example.com", "/~/v1/(?=users)", "ImplementationSpecific")
	route := strings.Replace(httpRoute("braces", "kong", "/v1/{id}", ""), "PathPrefix", "RegularExpression", 1)
	for _, tc := range []struct {
		name   string
		rust   bool
		object string
		denied []string // nil: allowed
	}{
		{name: "traditional_compatible: Ingress path with a { Rust refuses is denied", rust: true, object: braces,
			denied: []string{"Ingress default/braces: spec.rules[0].http.paths[0].path:", "repetition quantifier"}},
		{name: "traditional_compatible: Ingress path with a look-ahead is denied", rust: true, object: lookahead,
			denied: []string{"Ingress default/lookahead: spec.rules[0].http.paths[0].path:", "look-around"}},
		{name: "traditional_compatible: HTTPRoute path with a { Rust refuses is denied", rust: true, object: route,
			denied: []string{"HTTPRoute default/braces: spec.rules[0].matches[0].path:", "repetition quantifier"}},
		{name: "traditional: Ingress path with a { is allowed", object: braces},
		{name: "traditional: Ingress path with a look-ahead is allowed", object: lookahead},
		{name: "traditional: HTTPRoute path with a { is allowed", object: route},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newValidatorUnder(t, func() bool { return tc.rust })
			obj := objects(t, tc.object)[0]
			resp := v.Review(context.Background(), request(t, kindFor(t, obj), admissionv1.Create, obj))
			if tc.denied == nil {
				require.True(t, resp.Allowed, "denied: %v", resp.Result)
				return
			}
			require.False(t, resp.Allowed, "allowed")
			for _, want := range tc.denied {
				require.Contains(t, resp.Result.Message, want)
			}
		})
	}
}

// A router flavor learnt between two reviews, with no change to the cache in between, decides
// the second one: the translation of the cache kept for the reviews is not reused under other
// settings.
func TestReviewFollowsARouterFlavorLearntLater(t *testing.T) {
	var rust atomic.Bool
	v := newValidatorUnder(t, rust.Load)
	braces := objects(t, ingress("braces", "kong", "braces.example.com", "/~/v1/{id}", "ImplementationSpecific"))[0]
	resp := v.Review(context.Background(), request(t, store.KindIngress, admissionv1.Create, braces))
	require.True(t, resp.Allowed, "denied under the traditional router: %v", resp.Result)

	rust.Store(true) // a gateway said traditional_compatible
	resp = v.Review(context.Background(), request(t, store.KindIngress, admissionv1.Create, braces))
	require.False(t, resp.Allowed, "allowed under traditional_compatible")
	require.Contains(t, resp.Result.Message, "Ingress default/braces: spec.rules[0].http.paths[0].path:")
}

// newValidatorUnder is newValidator (synced, no gateway) translating with Rust's regexes when
// rust says so.
func newValidatorUnder(t testing.TB, rust func() bool) *Validator {
	t.Helper()
	v := newValidator(t, true, nil)
	v.opts.TranslatorOptions = func(now time.Time) translator.Options {
		return translator.Options{Now: now, RustRegexes: rust()}
	}
	return v
}

// Reviews translate the cache one or two at a time: a review that finds every turn taken for
// BusyWait is allowed with a warning rather than translating the cache once more (anyone who
// can reach the webhook can send reviews; each costs memory in proportion to the cache).
func TestReviewsAreBoundedWhenBusy(t *testing.T) {
	v := newValidator(t, true, nil)
	v.opts.BusyWait = 50 * time.Millisecond
	for range cap(v.turns) {
		v.turns <- struct{}{} // every turn taken, as by long reviews
	}
	obj := objects(t, ingress("bad", "kong", "bad.example.com", "/~/api/(v1", "ImplementationSpecific"))[0]
	resp := v.Review(context.Background(), request(t, kindFor(t, obj), admissionv1.Create, obj))
	require.True(t, resp.Allowed)
	require.Equal(t, []string{warnBusy}, resp.Warnings)

	<-v.turns // one frees up: the same review is judged
	resp = v.Review(context.Background(), request(t, kindFor(t, obj), admissionv1.Create, obj))
	require.False(t, resp.Allowed)
	require.Equal(t, DefaultMaxConcurrentReviews, cap(v.turns))
}
