package kongstate

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The expected values are the [G] examples of translation-rules.md §6, taken from KIC's golden files.
func TestIDsMatchKIC(t *testing.T) {
	assert.Equal(t, "90050c4f-539a-5bd9-bfb5-2ff1c430ca18", typeNamespaces["services"].String())
	assert.Equal(t, "78aafefa-16c7-5598-8955-58dc6264b27a", typeNamespaces["routes"].String())
	assert.Equal(t, "7e5adc17-c056-5c54-98c0-7f88774fccf6", typeNamespaces["consumers"].String())
	assert.Equal(t, "4b01092a-c5c8-53f2-bed8-175b4436913f", typeNamespaces["consumergroups"].String())
	assert.Equal(t, "66ef8da9-18d3-5bbc-9241-62b0e3ead8f1", typeNamespaces["vaults"].String())
	assert.Equal(t, "e9b79996-068a-576f-804e-98a685f0a58e", typeNamespaces["plugins"].String())

	assert.Equal(t, "fe1e2edc-5479-52fe-b0f4-b90d8d5f83ba", ServiceID("", "foo-namespace.foo-svc.80"))
	assert.Equal(t, "3eee2c18-8fcc-5661-8f84-5c89adfa404f", RouteID("", "foo-namespace.foo.foo-svc.example.com.80"))
	assert.Equal(t, "7deb6e70-60be-5dd2-b374-06551479ea5e", ConsumerID("", "consumer"))
	assert.Equal(t, "876a1c78-f75a-570e-a918-26506344add0", ConsumerGroupID("", "consumer-group-2"))
	assert.Equal(t, "61a22b86-f859-5c8a-a23c-97b92b14b635", PluginID("", "correlation-id", "", "default.httpbin.httpbin..80", "", ""))
	assert.Equal(t, "a340e1ec", PluginID("", "basic-auth", "default.svc-facade-beta.svc.facade", "", "", "")[:8])
	assert.NotEqual(t, ServiceID("", "a"), ServiceID("ws", "a"))
}

func TestTagsFor(t *testing.T) {
	ing := &netv1.Ingress{ObjectMeta: metav1.ObjectMeta{
		Name: "foo", Namespace: "default", UID: "u1",
		Annotations: map[string]string{UserTagsAnnotation: " a, b,,a ,c "},
	}}
	gvk := netv1.SchemeGroupVersion.WithKind("Ingress")
	assert.Equal(t, []string{
		"k8s-name:foo", "k8s-namespace:default", "k8s-kind:Ingress", "k8s-uid:u1",
		"k8s-group:networking.k8s.io", "k8s-version:v1", "a", "b", "c",
	}, TagsFor(ing, gvk))

	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "foo-svc", Namespace: "bar-namespace"}}
	assert.Equal(t, []string{"k8s-name:foo-svc", "k8s-namespace:bar-namespace", "k8s-kind:Service", "k8s-version:v1"},
		TagsFor(svc, corev1.SchemeGroupVersion.WithKind("Service")))

	ref, ok := ObjectRefFromTags(TagsFor(ing, gvk))
	require.True(t, ok)
	assert.Equal(t, ObjectRef{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress", Namespace: "default", Name: "foo", UID: "u1"}, ref)
	assert.Equal(t, "Ingress default/foo", ref.String())

	_, ok = ObjectRefFromTags(PlaceholderServiceTags())
	assert.False(t, ok, "placeholder tags name no object")
	_, ok = ObjectRefFromTags([]string{"k8s-name:x", "k8s-kind:Service", "k8s-uid:u"})
	assert.False(t, ok, "namespaced kind without namespace")
	ref, ok = ObjectRefFromTags([]string{"k8s-name:p", "k8s-kind:KongClusterPlugin", "k8s-uid:u", "k8s-group:configuration.konghq.com", "k8s-version:v1"})
	require.True(t, ok)
	assert.Equal(t, "KongClusterPlugin p", ref.String())
	ref, ok = ObjectRefFromTags([]string{"k8s-name:s", "k8s-namespace:n", "k8s-kind:Service", "k8s-uid:u", "k8s-group:core", "k8s-version:v1"})
	require.True(t, ok)
	assert.Equal(t, "", ref.Group)
	ref, ok = ObjectRefFromTags([]string{"k8s-name:s", "k8s-namespace:n", "k8s-kind:Service", "k8s-uid:u", "k8s-version:v1", "k8s-name:spoofed"})
	require.True(t, ok)
	assert.Equal(t, "s", ref.Name, "user tags cannot override the object's own tags")
	_ = schema.GroupVersionKind{}
}

func TestRenderSortsAndFillsDefaults(t *testing.T) {
	s := &State{
		Services: []*file.FService{
			{Service: kong.Service{Name: kong.String("foo-namespace.foo-svc.80")}, Routes: []*file.FRoute{
				{Route: kong.Route{Name: kong.String("default.httpbin-other.httpbin..80")}},
				{Route: kong.Route{Name: kong.String("default.httpbin.httpbin..80"), PathHandling: kong.String("v1")}},
			}},
			{Service: kong.Service{Name: kong.String("foo-namespace.foo-svc.8000")}},
		},
		Upstreams: []*file.FUpstream{
			{Upstream: kong.Upstream{Name: kong.String("a")}, Targets: []*file.FTarget{
				{Target: kong.Target{Target: kong.String("10.0.0.1:80")}},
				{Target: kong.Target{Target: kong.String("10.0.0.2:80")}},
			}},
			{Upstream: kong.Upstream{Name: kong.String("b"), Algorithm: kong.String("latency")}},
		},
		Certificates: []*file.FCertificate{
			{Cert: kong.String("A"), SNIs: []kong.SNI{{Name: kong.String("z")}, {Name: kong.String("a")}}},
			{Cert: kong.String("B")},
		},
	}
	c := s.Content()
	assert.Equal(t, "3.0", c.FormatVersion)
	assert.Equal(t, "foo-namespace.foo-svc.8000", *c.Services[0].Name)
	r := c.Services[1].Routes
	assert.Equal(t, "default.httpbin.httpbin..80", *r[0].Name)
	assert.Equal(t, "v1", *r[0].PathHandling)
	assert.Equal(t, "v0", *r[1].PathHandling)
	assert.Equal(t, 426, *r[1].HTTPSRedirectStatusCode)
	assert.Equal(t, "b", *c.Upstreams[0].Name)
	assert.Equal(t, "latency", *c.Upstreams[0].Algorithm)
	assert.Equal(t, "round-robin", *c.Upstreams[1].Algorithm)
	assert.Equal(t, "10.0.0.2:80", *c.Upstreams[1].Targets[0].Target.Target)
	assert.Equal(t, "B", *c.Certificates[0].Cert)
	assert.Equal(t, "a", *c.Certificates[1].SNIs[0].Name)
	// The state is not modified by rendering.
	assert.Nil(t, s.Services[0].Routes[0].PathHandling)
	assert.Nil(t, s.Upstreams[0].Algorithm)
}

func TestDeclarativeConfigStub(t *testing.T) {
	b, err := (&State{}).DeclarativeConfig()
	require.NoError(t, err)
	assert.JSONEq(t, `{"_format_version":"3.0","upstreams":[{"name":"kong"}]}`, string(b))
	b, err = (*State)(nil).DeclarativeConfig()
	require.NoError(t, err)
	assert.JSONEq(t, `{"_format_version":"3.0","upstreams":[{"name":"kong"}]}`, string(b))

	s := &State{Upstreams: []*file.FUpstream{{Upstream: kong.Upstream{Name: kong.String("x")}}}}
	b, err = s.DeclarativeConfig()
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	assert.Len(t, m["upstreams"], 1)
	assert.NotContains(t, m, "_info")
}

func TestPluginOrder(t *testing.T) {
	s := &State{Plugins: []*file.FPlugin{
		{Plugin: kong.Plugin{Name: kong.String("a"), Route: &kong.Route{ID: kong.String("r1")}}},
		{Plugin: kong.Plugin{Name: kong.String("a"), Route: &kong.Route{ID: kong.String("r2")}}},
		{Plugin: kong.Plugin{Name: kong.String("b")}},
	}}
	c := s.Content()
	assert.Equal(t, "b", *c.Plugins[0].Name)
	assert.Equal(t, "r2", *c.Plugins[1].Route.ID)
}

// Plugins keep enabled and protocols unset when the object leaves them unset (Kong fills them
// from the plugin schema, as KIC fills them from the same schema; translation-rules.md §11.3), keep
// them when set, and never carry run_on, which Kong 3 refuses.
func TestPluginRenderDefaults(t *testing.T) {
	s := &State{Plugins: []*file.FPlugin{
		{Plugin: kong.Plugin{Name: kong.String("key-auth"), RunOn: kong.String("first")}},
		{Plugin: kong.Plugin{Name: kong.String("cors"), Enabled: kong.Bool(false), Protocols: kong.StringSlice("grpc")}},
	}}
	got := map[string]file.FPlugin{}
	for _, p := range s.Content().Plugins {
		got[*p.Name] = p
	}
	ka := got["key-auth"]
	if ka.RunOn != nil || ka.Enabled != nil || ka.Protocols != nil {
		t.Fatalf("key-auth: run_on %v, enabled %v, protocols %v", ka.RunOn, ka.Enabled, ka.Protocols)
	}
	cors := got["cors"]
	if *cors.Enabled || len(cors.Protocols) != 1 || *cors.Protocols[0] != "grpc" {
		t.Fatalf("cors: set values must be kept: enabled %v, protocols %v", *cors.Enabled, cors.Protocols)
	}
	if s.Plugins[0].RunOn == nil {
		t.Fatal("rendering must not modify the State")
	}
}

// A Renderer gives State.DeclarativeConfig's bytes, whether the entities are new, carried
// over from the State it rendered before, or changed (a new pointer).
func TestRendererMatchesDeclarativeConfig(t *testing.T) {
	svc := func(name string, paths ...string) *file.FService {
		s := &file.FService{Service: kong.Service{Name: kong.String(name), Host: kong.String(name + ".svc")}}
		for _, p := range paths {
			s.Routes = append(s.Routes, &file.FRoute{Route: kong.Route{Name: kong.String(name + p), Paths: kong.StringSlice(p)}})
		}
		return s
	}
	up := func(name string, targets ...string) *file.FUpstream {
		u := &file.FUpstream{Upstream: kong.Upstream{Name: kong.String(name)}}
		for _, t := range targets {
			u.Targets = append(u.Targets, &file.FTarget{Target: kong.Target{Target: kong.String(t)}})
		}
		return u
	}
	a, b := svc("a", "/x", "/y"), svc("b", "/<&>", "~/x\\d+\"é\u2028")
	// Plugins without their defaults, out of order: the Renderer fills and sorts copies.
	a.Plugins = []*file.FPlugin{{Plugin: kong.Plugin{Name: kong.String("z")}}, {Plugin: kong.Plugin{Name: kong.String("a"), Enabled: kong.Bool(false)}}}
	a.Routes[0].Plugins = []*file.FPlugin{{Plugin: kong.Plugin{Name: kong.String("y")}}, {Plugin: kong.Plugin{Name: kong.String("b")}}}
	unrendered := a.DeepCopy()
	// Rendered as DeepCopy leaves it (through JSON): invalid UTF-8 becomes U+FFFD.
	config := func() kong.Configuration { return kong.Configuration{"uri": "\xff\x0f", "n": 12345678901234567} }
	a.Routes[0].Plugins[0].Config = config()
	ua, ub := up("a.svc", "10.0.0.1:80", "10.0.0.2:80"), up("b.svc")
	first := &State{Services: []*file.FService{a, b}, Upstreams: []*file.FUpstream{ua, ub},
		Consumers:      []*file.FConsumer{{Consumer: kong.Consumer{Username: kong.String("c")}, Groups: []*kong.ConsumerGroup{{Name: kong.String("g")}}}},
		ConsumerGroups: []*file.FConsumerGroupObject{{ConsumerGroup: kong.ConsumerGroup{Name: kong.String("g")}}}}
	second := *first
	second.Services = []*file.FService{a, svc("b", "/z"), svc("c", "/")}
	second.Upstreams = []*file.FUpstream{up("c.svc", "10.0.0.3:80"), ua}
	third := State{Services: []*file.FService{a}} // no upstream: rendered without cache
	// Equal names keep the State's order (a stable sort), in any order of the State.
	fourth := State{Services: []*file.FService{b, svc("a", "/1"), a, svc("c", "/")}, Upstreams: []*file.FUpstream{ub, up("a.svc", "10.0.0.9:80"), ua}}

	r := &Renderer{}
	for i, s := range []*State{first, &second, first, &third, &second, &fourth} {
		want, err := s.DeclarativeConfig()
		require.NoError(t, err)
		got, err := r.DeclarativeConfig(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "state %d", i)
		quoted, err := r.QuotedDeclarativeConfig(s, `{"config":"`, `"}`)
		require.NoError(t, err)
		wantDBLess, err := s.DBLessConfig()
		require.NoError(t, err)
		wantQuoted := QuotedBody(wantDBLess, `{"config":"`, `"}`)
		require.Equal(t, string(wantQuoted), quoted.String(), "state %d, quoted", i)
		require.Equal(t, len(wantQuoted), quoted.Len(), "state %d, quoted", i)
		require.True(t, quoted.Equal(BodyOf(wantQuoted)), "state %d, quoted", i)
		read, err := io.ReadAll(quoted.Reader())
		require.NoError(t, err)
		require.Equal(t, string(wantQuoted), string(read), "state %d, quoted, read", i)
		var body struct{ Config string }
		require.NoError(t, json.Unmarshal(quoted.Bytes(), &body), "state %d, quoted", i)
		require.Equal(t, string(wantDBLess), body.Config, "state %d, quoted", i)
	}
	require.Equal(t, config(), a.Routes[0].Plugins[0].Config, "rendering modified the State")
	a.Routes[0].Plugins[0].Config = nil
	require.Equal(t, unrendered, a, "rendering modified the State")
}

// A Renderer gives State.DeclarativeConfig's bytes after any sequence of States made of
// entities old and new, some with the same sort key, in any order (the body's order of keys
// is carried over from one body to the next), in every list whose bytes it keeps.
func TestRendererMatchesDeclarativeConfigAfterRandomChanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 13))
	name := func() string {
		if rng.IntN(100) == 0 {
			return "same" // a name twice, now and then
		}
		return fmt.Sprintf("s%06d", rng.IntN(1000000))
	}
	newService := func() *file.FService {
		return &file.FService{Service: kong.Service{Name: kong.String(name()), Host: kong.String("h")}}
	}
	newUpstream := func() *file.FUpstream { return &file.FUpstream{Upstream: kong.Upstream{Name: kong.String(name())}} }
	newConsumer := func() *file.FConsumer {
		c := &file.FConsumer{Consumer: kong.Consumer{CustomID: kong.String(name())},
			KeyAuths: []*kong.KeyAuth{{Key: kong.String(name()), Tags: kong.StringSlice("k8s-name:x")}}}
		if rng.IntN(10) > 0 { // some with a custom_id only, which go first
			c.Username = kong.String(name())
			c.ID = kong.String("id-" + *c.Username)
		}
		if rng.IntN(3) == 0 {
			c.Groups = []*kong.ConsumerGroup{{Name: kong.String("g" + name())}, {Name: kong.String("<&>")}}
		}
		if rng.IntN(20) == 0 {
			c.Plugins = []*file.FPlugin{{Plugin: kong.Plugin{Name: kong.String("acl"), Config: kong.Configuration{"uri": "\xff"}}}}
		}
		return c
	}
	newGroup := func() *file.FConsumerGroupObject {
		return &file.FConsumerGroupObject{ConsumerGroup: kong.ConsumerGroup{Name: kong.String(name())}}
	}
	newPlugin := func() *file.FPlugin {
		p := &file.FPlugin{Plugin: kong.Plugin{Name: kong.String(name()), Config: kong.Configuration{"minute": float64(rng.IntN(100))}}}
		switch rng.IntN(3) {
		case 0:
			p.Consumer = &kong.Consumer{ID: kong.String(name())}
		case 1:
			p.Route = &kong.Route{ID: kong.String(name())}
		}
		return p
	}
	newCertificate := func() *file.FCertificate {
		return &file.FCertificate{Cert: kong.String(name()), Key: kong.String("k"),
			SNIs: []kong.SNI{{Name: kong.String("b.example")}, {Name: kong.String("a.example")}}}
	}
	newCACertificate := func() *file.FCACertificate {
		return &file.FCACertificate{CACertificate: kong.CACertificate{Cert: kong.String(name())}}
	}
	newVault := func() *file.FVault {
		return &file.FVault{Vault: kong.Vault{Prefix: kong.String(name()), Name: kong.String("env")}}
	}
	// Enough entities, and cores, that a body rendered whole is rendered in parallel
	// (renderEach), whatever the machine.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	s := &State{}
	for range 2 * parallelRenderMin {
		s.Services = append(s.Services, newService())
		s.Upstreams = append(s.Upstreams, newUpstream())
		s.Consumers = append(s.Consumers, newConsumer())
	}
	for range 20 {
		s.ConsumerGroups = append(s.ConsumerGroups, newGroup())
		s.Plugins = append(s.Plugins, newPlugin())
		s.Certificates = append(s.Certificates, newCertificate())
		s.CACertificates = append(s.CACertificates, newCACertificate())
		s.Vaults = append(s.Vaults, newVault())
	}
	r := &Renderer{}
	// The bodies handed out, with their bytes then: the Renderer fills the arrays of a list
	// the round before last let go of (listCache), never what a Body holds.
	type handedOut struct {
		step int
		body Body
		was  string
	}
	var bodies []handedOut
	for step := range 160 {
		next := *s
		renew := step%40 == 20 // every entity new: the whole body rendered again
		switch step % 40 {
		case 30: // lists that empty and fill again
			next.Consumers, next.Plugins, next.Vaults = nil, nil, nil
		case 35:
			next.Services, next.Upstreams, next.Certificates = nil, nil, nil
		}
		next.Services = changed(rng, next.Services, newService, renew)
		next.Upstreams = changed(rng, next.Upstreams, newUpstream, renew)
		next.Consumers = changed(rng, next.Consumers, newConsumer, renew)
		next.ConsumerGroups = changed(rng, next.ConsumerGroups, newGroup, renew)
		next.Plugins = changed(rng, next.Plugins, newPlugin, renew)
		next.Certificates = changed(rng, next.Certificates, newCertificate, renew)
		next.CACertificates = changed(rng, next.CACertificates, newCACertificate, renew)
		next.Vaults = changed(rng, next.Vaults, newVault, renew)
		if step%50 == 0 {
			slices.SortFunc(next.Upstreams, func(a, b *file.FUpstream) int { return strings.Compare(*a.Name, *b.Name) })
			slices.SortFunc(next.Consumers, func(a, b *file.FConsumer) int { return strings.Compare(*a.CustomID, *b.CustomID) })
		}
		s = &next
		want, err := s.DeclarativeConfig()
		require.NoError(t, err)
		got, err := r.DeclarativeConfig(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "step %d", step)
		if step%4 == 0 {
			quoted, err := r.QuotedDeclarativeConfig(s, `{"config":"`, `"}`)
			require.NoError(t, err)
			wantDBLess, err := s.DBLessConfig()
			require.NoError(t, err)
			require.Equal(t, string(QuotedBody(wantDBLess, `{"config":"`, `"}`)), quoted.String(), "step %d, quoted", step)
			bodies = append(bodies, handedOut{step, quoted, quoted.String()})
		}
	}
	for _, b := range bodies {
		require.Equal(t, b.was, b.body.String(), "the body of step %d changed after later rounds", b.step)
	}
}

// changed is a copy of list with a few entities replaced by fresh ones, removed or added
// (every one replaced when renew is set).
func changed[E any](rng *rand.Rand, list []*E, fresh func() *E, renew bool) []*E {
	list = slices.Clone(list)
	if renew {
		for i := range list {
			list[i] = fresh()
		}
	}
	for range rng.IntN(4) {
		if len(list) == 0 {
			list = append(list, fresh())
			continue
		}
		switch i := rng.IntN(len(list)); rng.IntN(3) {
		case 0:
			list[i] = fresh()
		case 1:
			list = slices.Delete(list, i, i+1)
		default:
			list = slices.Insert(list, i, fresh())
		}
	}
	return list
}

// renderEach, in parallel or not, puts each entity's bytes in its place and returns the
// error of the first entity (in the order given) that failed, as rendering one after the
// other would.
func TestRenderEach(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, n := range []int{7, parallelRenderMin, 10 * parallelRenderMin} {
		entities := make([]*int, n)
		var todo []int
		for i := range entities {
			v := i
			entities[i] = &v
			if i%3 != 1 {
				todo = append(todo, i)
			}
		}
		out := make([][]byte, n)
		render := func(k int) error { out[k] = []byte(strconv.Itoa(*entities[k])); return nil }
		require.NoError(t, renderEach(todo, render))
		for i := range out {
			if i%3 == 1 {
				require.Nil(t, out[i], "entity %d is not to render", i)
			} else {
				require.Equal(t, strconv.Itoa(i), string(out[i]))
			}
		}
		failing := func(k int) error {
			if v := *entities[k]; v >= n/2 && v%3 == 0 {
				return fmt.Errorf("entity %d", v)
			}
			return nil
		}
		first := n / 2
		for first%3 != 0 {
			first++
		}
		require.EqualError(t, renderEach(todo, failing), fmt.Sprintf("entity %d", first), "n=%d", n)
	}
}

// A body that cannot be rendered gives the error a whole render gives (the first entity that
// fails in the body's order), though every list's entities and the skeleton are rendered as
// one set of jobs on several cores: here two upstreams in different jobs fail with different
// errors, the first in the body's order in a job after the services'.
func TestRendererFailsAsDeclarativeConfigDoes(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	s := &State{}
	for i := range 4 * parallelRenderMin {
		name := fmt.Sprintf("svc-%04d", 4*parallelRenderMin-i) // the State's order is the body's
		s.Services = append(s.Services, &file.FService{Service: kong.Service{Name: kong.String(name), Host: kong.String(name)}})
		s.Upstreams = append(s.Upstreams, &file.FUpstream{Upstream: kong.Upstream{Name: kong.String(name)}})
	}
	threshold := func(u *file.FUpstream, v float64) { u.Healthchecks = &kong.Healthcheck{Threshold: kong.Float64(v)} }
	threshold(s.Upstreams[3*parallelRenderMin], math.NaN())
	threshold(s.Upstreams[3*parallelRenderMin+100], math.Inf(1))
	_, want := s.DeclarativeConfig()
	require.ErrorContains(t, want, "NaN")
	for range 20 {
		_, err := (&Renderer{}).DeclarativeConfig(s)
		require.EqualError(t, err, want.Error())
		_, err = (&Renderer{}).QuotedDeclarativeConfig(s, "", "")
		require.EqualError(t, err, want.Error())
	}
	threshold(s.Upstreams[3*parallelRenderMin], 1)
	_, want = s.DeclarativeConfig()
	require.ErrorContains(t, want, "+Inf")
	_, err := (&Renderer{}).DeclarativeConfig(s)
	require.EqualError(t, err, want.Error())
}

// A body after one entity changed shares every run of entities with the body before but
// the one that holds it (bodyRuns.cut): a round allocates for what changed, not for every
// entity of the configuration (issue #45).
func TestRendererBodiesShareTheRunsThatDidNotChange(t *testing.T) {
	s := &State{}
	for i := range 4000 {
		name := fmt.Sprintf("s%05d", i)
		s.Services = append(s.Services, &file.FService{Service: kong.Service{Name: kong.String(name), Host: kong.String(name + ".svc")}})
		s.Upstreams = append(s.Upstreams, &file.FUpstream{Upstream: kong.Upstream{Name: kong.String(name + ".svc")}})
	}
	r := &Renderer{}
	before, err := r.QuotedDeclarativeConfig(s, `{"config":"`, `"}`)
	require.NoError(t, err)
	next := *s
	next.Services = slices.Clone(s.Services)
	changed := *next.Services[1234]
	changed.Host = kong.String("other.svc")
	next.Services[1234] = &changed
	after, err := r.QuotedDeclarativeConfig(&next, `{"config":"`, `"}`)
	require.NoError(t, err)
	wantDBLess, err := next.DBLessConfig()
	require.NoError(t, err)
	require.Equal(t, string(QuotedBody(wantDBLess, `{"config":"`, `"}`)), after.String())

	shared := map[*[]byte]bool{}
	for _, run := range before.chunks {
		shared[unsafe.SliceData(run)] = true
	}
	made := 0
	for _, run := range after.chunks {
		if !shared[unsafe.SliceData(run)] {
			made++
		}
	}
	require.Greater(t, len(after.chunks), 8000/(2*runLength), "the entities are not cut into runs")
	// The prefix, the skeleton's three parts and the suffix are made again, and the changed
	// service's run: two runs when its new bytes' address is a cut where the old one's was not
	// (runs are cut at addresses, 1 in 128), which splits that run in two.
	require.LessOrEqual(t, made, 5+2, "runs made again, of %d", len(after.chunks))
}
