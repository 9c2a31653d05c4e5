// Package hostile runs the hostile-input corpus (issue #26, docs/security.md): manifests a
// tenant could write to get in or to read what it should not, each with what must happen and
// what must never show. Every case is translated as `konductor translate` does, the result is
// loaded by the Kong emulator as a DB-less gateway would (a configuration Kong refuses whole
// is a failure: one object's bad input must not hold back the others), and the objects the
// case names are reviewed by the admission webhook.
//
// A case is a folder of cases/ with in.yaml and expect.yaml:
//
//	loadError: "..."          # the manifests must not load, with this in the error
//	problems:                 # each must be reported (object "Kind ns/name", text in its message)
//	  - {object: "Ingress default/open", says: "left out"}
//	absent:                   # entities the configuration must not hold, by type and name
//	  routes: [default.open.open-svc.open.example.com.80]
//	present:                  # entities it must hold (the victim's configuration is intact)
//	  routes: [default.fine.fine-svc.fine.example.com.80]
//	consumerPlugins:          # the plugins Kong holds on a consumer ("username:x" or "custom_id:x")
//	  "custom_id:carol-7": [rate-limiting]
//	neverShown: [s3cret]      # in no problem and no webhook answer
//	webhook:                  # reviews of the case's objects (created as they are)
//	  - {object: "KongConsumer team-b/impostor", denied: true, says: "left out"}
//	targets:                  # upstream targets (host:port) Kong must not (and must) hold
//	  absent: [localtest.me:8001]
//	  present: [api.example.org:80]
//	translator:               # the controller's settings, as translator.Options (none: defaults)
//	  externalNameServices: deny
package hostile

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/konductor/konductor/internal/admission"
	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/manifest"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

type expectation struct {
	LoadError string              `json:"loadError"`
	Problems  []problemExpected   `json:"problems"`
	Absent    map[string][]string `json:"absent"`
	Present   map[string][]string `json:"present"`
	// ConsumerPlugins are, by "username:x" or "custom_id:x", the names of the plugins Kong
	// holds on that consumer, exactly.
	ConsumerPlugins map[string][]string `json:"consumerPlugins"`
	NeverShown      []string            `json:"neverShown"`
	Webhook         []reviewExpected    `json:"webhook"`
	Targets         struct {
		Absent  []string `json:"absent"`
		Present []string `json:"present"`
	} `json:"targets"`
	// Translator are the translation's options; with expressionRoutes the gateway's router
	// flavor is expressions too.
	Translator translator.Options `json:"translator"`
}

type problemExpected struct {
	Object string `json:"object"`
	Says   string `json:"says"`
}

type reviewExpected struct {
	Object string `json:"object"`
	Denied bool   `json:"denied"`
	Says   string `json:"says"`
}

func TestHostileCorpus(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("cases", "*"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dir, "expect.yaml"))
			require.NoError(t, err)
			var want expectation
			require.NoError(t, sigsyaml.UnmarshalStrict(raw, &want))
			runCase(t, dir, want)
		})
	}
}

func runCase(t *testing.T, dir string, want expectation) {
	ctx := context.Background()
	loaded, err := loadWithin(t, filepath.Join(dir, "in.yaml"))
	if want.LoadError != "" {
		require.Error(t, err, "the manifests must not load")
		require.Contains(t, err.Error(), want.LoadError)
		return
	}
	require.NoError(t, err)
	st, err := store.NewForObjects(loaded.Objects, store.Options{IngressClass: "kong"})
	require.NoError(t, err)
	snap, err := st.Snapshot(ctx)
	require.NoError(t, err)
	res := translator.Build(snap, want.Translator)

	var shown []string // every problem, as Events would say it
	for _, p := range res.Problems {
		shown = append(shown, p.String())
	}
	for _, p := range want.Problems {
		require.True(t, anyProblem(res.Problems, p), "no problem on %s saying %q; problems:\n%s", p.Object, p.Says, strings.Join(shown, "\n"))
	}

	// What a DB-less Kong loads: the whole configuration is taken.
	body, err := res.State.DeclarativeConfig()
	require.NoError(t, err)
	emu := kongemu.New(kongemu.Options{Mode: kongemu.DBLess, Edition: kongemu.Enterprise, RouterFlavor: routerFlavor(want.Translator)}) // Enterprise: consumer groups
	rec := httptest.NewRecorder()
	emu.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/config?flatten_errors=1", bytes.NewReader(body)))
	require.Equal(t, http.StatusCreated, rec.Code, "Kong refused the configuration: %s", rec.Body.String())
	for kind, names := range want.Absent {
		for _, n := range names {
			require.Nil(t, emu.Entity(kind, n), "%s %s is in what Kong holds", kind, n)
		}
	}
	for kind, names := range want.Present {
		for _, n := range names {
			require.NotNil(t, emu.Entity(kind, n), "%s %s is not in what Kong holds", kind, n)
		}
	}
	for consumer, plugins := range want.ConsumerPlugins {
		require.ElementsMatch(t, plugins, pluginsOnConsumer(t, emu, consumer), "the plugins on consumer %s", consumer)
	}
	requireGuardedNeverReached(t, emu, loaded.Objects)
	targets := map[string]bool{}
	for _, u := range res.State.Upstreams {
		for _, tg := range u.Targets {
			targets[*tg.Target.Target] = true
		}
	}
	for _, tg := range want.Targets.Absent {
		require.False(t, targets[tg], "target %s is in what Kong holds", tg)
	}
	for _, tg := range want.Targets.Present {
		require.True(t, targets[tg], "target %s is not in what Kong holds", tg)
	}

	// The webhook, reviewing each object named as if it were created now.
	if len(want.Webhook) > 0 {
		for _, r := range want.Webhook {
			obj := find(t, loaded.Objects, r.Object)
			others := withoutObject(loaded.Objects, obj)
			rst, err := store.NewForObjects(others, store.Options{IngressClass: "kong"})
			require.NoError(t, err)
			v := admission.NewValidator(admission.Options{Source: rst, Now: func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) },
				TranslatorOptions: func(now time.Time) translator.Options {
					opts := want.Translator
					opts.Now = now
					return opts
				}})
			resp := v.Review(ctx, review(t, obj))
			answer := strings.Join(resp.Warnings, "\n")
			if resp.Result != nil {
				answer += "\n" + resp.Result.Message
			}
			shown = append(shown, answer)
			require.Equal(t, r.Denied, !resp.Allowed, "review of %s: %s", r.Object, answer)
			requireNamesNoOtherNamespace(t, answer, obj.GetNamespace(), loaded.Objects)
			if r.Says != "" {
				require.Contains(t, answer, r.Says, "review of %s", r.Object)
			}
		}
	}
	for _, secret := range want.NeverShown {
		for _, s := range shown {
			require.NotContains(t, s, secret, "a Secret's value is shown")
		}
	}
}

// routerFlavor is the gateway's router flavor for a translation with opts.
func routerFlavor(opts translator.Options) string {
	if opts.ExpressionRoutes {
		return "expressions"
	}
	return ""
}

// pluginsOnConsumer are the names of the plugins emu holds on the consumer named by
// "username:x" or "custom_id:x", which must exist.
func pluginsOnConsumer(t *testing.T, emu *kongemu.Emulator, name string) []string {
	t.Helper()
	field, value, _ := strings.Cut(name, ":")
	id := ""
	for _, c := range emu.Entities("consumers") {
		if c[field] == value {
			id, _ = c["id"].(string)
		}
	}
	require.NotEmpty(t, id, "Kong holds no consumer with %s", name)
	out := []string{}
	for _, p := range emu.Entities("plugins") {
		if ref, ok := p["consumer"].(map[string]any); ok && ref["id"] == id {
			out = append(out, p["name"].(string))
		}
	}
	return out
}

// requireNamesNoOtherNamespace fails when the webhook's answer to a review of an object of
// namespace own names an object (ns/name) or a namespace (namespace ns) of another
// namespace of the case: a tenant learns nothing of other namespaces from the webhook.
func requireNamesNoOtherNamespace(t *testing.T, answer, own string, objs []client.Object) {
	t.Helper()
	if own == "" {
		return // a cluster-scoped object is an administrator's
	}
	for _, o := range objs {
		ns := o.GetNamespace()
		if ns == "" || ns == own {
			continue
		}
		named := regexp.MustCompile(`(^|[^a-z0-9.-])` + regexp.QuoteMeta(ns) + `/|namespaces? "?` + regexp.QuoteMeta(ns) + `\b`)
		require.False(t, named.MatchString(answer), "the answer to a review in namespace %s names namespace %s: %s", own, ns, answer)
	}
}

// requireGuardedNeverReached sends, through the emulator's proxy, a request without any
// credential to every host and path of every Ingress that asks for an authentication plugin
// or for a plugin that does not resolve (on itself or on a backend Service): none may reach a
// backend (fail closed, in requests: a route is never served without its auth plugin).
func requireGuardedNeverReached(t *testing.T, emu *kongemu.Emulator, objs []client.Object) {
	t.Helper()
	var reached atomic.Int64
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		w.WriteHeader(http.StatusOK)
	})
	proxy := emu.Proxy(kongemu.ProxyOptions{Resolve: func(string, int) http.Handler { return backend }})
	requests := guardedRequests(objs)
	if len(requests) > 0 {
		t.Logf("%d requests to guarded Ingresses sent without credentials: none reached a backend", len(requests))
	}
	for _, g := range requests {
		before := reached.Load()
		r := httptest.NewRequest(http.MethodGet, g.path, nil)
		r.Host = g.host
		rec := httptest.NewRecorder()
		proxy.ServeHTTP(rec, r)
		require.Equal(t, before, reached.Load(), "%s: GET %s%s without credentials reached a backend (%d)", g.object, g.host, g.path, rec.Code)
		require.GreaterOrEqual(t, rec.Code, 400, "%s: GET %s%s", g.object, g.host, g.path)
	}
}

type guardedRequest struct{ object, host, path string }

// authPlugins are Kong's bundled authentication plugins (and the acl that follows them).
var authPlugins = map[string]bool{"key-auth": true, "basic-auth": true, "jwt": true, "oauth2": true, "hmac-auth": true,
	"ldap-auth": true, "mtls-auth": true, "openid-connect": true, "acl": true, "key-auth-enc": true}

// guardedRequests are the requests of Ingresses whose plugins guard them.
func guardedRequests(objs []client.Object) []guardedRequest {
	plugins := map[string]string{}  // "ns/name" (cluster plugins: "/name") -> plugin
	services := map[string]string{} // "ns/name" -> konghq.com/plugins
	for _, o := range objs {
		switch o := o.(type) {
		case *kongv1.KongPlugin:
			plugins[o.Namespace+"/"+o.Name] = o.PluginName
		case *kongv1.KongClusterPlugin:
			plugins["/"+o.Name] = o.PluginName
		case *corev1.Service:
			services[o.Namespace+"/"+o.Name] = o.Annotations["konghq.com/plugins"]
		}
	}
	guarded := func(ns, annotation string) bool {
		for _, ref := range strings.Split(annotation, ",") {
			ref = strings.TrimSpace(ref)
			if ref == "" {
				continue
			}
			refNS, name, cross := strings.Cut(ref, ":")
			if !cross {
				refNS, name = ns, ref
			}
			plugin, ok := plugins[refNS+"/"+name]
			if !ok {
				plugin, ok = plugins["/"+name]
			}
			if !ok || authPlugins[plugin] {
				return true
			}
		}
		return false
	}
	var out []guardedRequest
	for _, o := range objs {
		ing, ok := o.(*netv1.Ingress)
		if !ok {
			continue
		}
		for _, rule := range ing.Spec.Rules {
			if rule.HTTP == nil {
				continue
			}
			host := rule.Host
			if host == "" || strings.HasPrefix(host, "*") {
				host = "any" + strings.TrimPrefix(host, "*")
			}
			for _, p := range rule.HTTP.Paths {
				g := guarded(ing.Namespace, ing.Annotations["konghq.com/plugins"])
				if p.Backend.Service != nil {
					g = g || guarded(ing.Namespace, services[ing.Namespace+"/"+p.Backend.Service.Name])
				}
				if g && strings.HasPrefix(p.Path, "/") {
					out = append(out, guardedRequest{object: "Ingress " + ing.Namespace + "/" + ing.Name, host: host, path: p.Path})
				}
			}
		}
	}
	return out
}

// loadWithin loads the manifests, failing the test when that takes more than 10 s (a YAML
// alias bomb must be refused, not expanded).
func loadWithin(t *testing.T, path string) (*manifest.Loaded, error) {
	type result struct {
		l   *manifest.Loaded
		err error
	}
	done := make(chan result, 1)
	go func() {
		l, err := manifest.LoadAll(path)
		done <- result{l, err}
	}()
	select {
	case r := <-done:
		return r.l, r.err
	case <-time.After(10 * time.Second):
		t.Fatal("loading the manifests hangs")
		return nil, nil
	}
}

func anyProblem(ps []translator.Problem, want problemExpected) bool {
	for _, p := range ps {
		if refName(p.Object) == want.Object && strings.Contains(p.String(), want.Says) {
			return true
		}
	}
	return false
}

// refName is "Kind ns/name" (or "Kind name" for a cluster-scoped object).
func refName(r kongstate.ObjectRef) string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

func find(t *testing.T, objs []client.Object, name string) client.Object {
	t.Helper()
	for _, o := range objs {
		if refName(kongstate.ObjectRef{Kind: kindOf(o), Namespace: o.GetNamespace(), Name: o.GetName()}) == name {
			return o
		}
	}
	t.Fatalf("no object %s in the case", name)
	return nil
}

func withoutObject(objs []client.Object, drop client.Object) []client.Object {
	var out []client.Object
	for _, o := range objs {
		if o != drop {
			out = append(out, o)
		}
	}
	return out
}

func kindOf(o client.Object) string {
	gvks, _, err := store.NewScheme().ObjectKinds(o)
	if err != nil || len(gvks) == 0 {
		return fmt.Sprintf("%T", o)
	}
	return gvks[0].Kind
}

// review is the admission request creating obj.
func review(t *testing.T, obj client.Object) *admissionv1.AdmissionRequest {
	t.Helper()
	gvks, _, err := store.NewScheme().ObjectKinds(obj)
	require.NoError(t, err)
	gvk := gvks[0]
	var kind store.Kind
	for _, k := range store.AllKinds() {
		if k.GroupVersionKind().GroupKind() == gvk.GroupKind() {
			kind = k
		}
	}
	obj = obj.DeepCopyObject().(client.Object)
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	raw, err := json.Marshal(obj)
	require.NoError(t, err)
	return &admissionv1.AdmissionRequest{
		UID:       "review",
		Kind:      metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
		Resource:  metav1.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: kind.Resource()},
		Name:      obj.GetName(),
		Namespace: obj.GetNamespace(),
		Operation: admissionv1.Create,
		Object:    runtime.RawExtension{Raw: raw},
	}
}
