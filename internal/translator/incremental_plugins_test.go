package translator

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kong/go-kong/kong"
	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	kongv1beta1 "github.com/kong/kubernetes-configuration/api/configuration/v1beta1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/store"
)

// TestIncrementalMatchesBuildWithPlugins is TestIncrementalMatchesBuild on clusters of
// KongPlugins and KongClusterPlugins (the golden cases that have some, and pluginTestCluster),
// with edits mostly of plugins: configuration, enabled, protocols, ordering, run_on and
// instance name changed (to valid and invalid values), configFrom and configPatches Secrets
// rotated, deleted and created, plugin names and global labels changed, plugins created and
// deleted while referenced, and konghq.com/plugins annotations changed. It fails when plugin
// changes are not spliced (the property would then hold trivially).
func TestIncrementalMatchesBuildWithPlugins(t *testing.T) {
	var starts []translationStart
	for _, s := range goldenStarts(t) {
		if len(s.snap.KongPlugins)+len(s.snap.KongClusterPlugins) > 0 {
			starts = append(starts, s)
		}
	}
	starts = append(starts, translationStart{"plugins cluster", pluginTestCluster(), Options{}})
	steps := 200
	if testing.Short() {
		steps = 60
	}
	stats, reasons := matchBuildRounds(t, starts, steps, 47, func(ed *editor) { ed.pluginsMostly = true })
	t.Logf("full because: %v", reasons)
	cluster := stats["plugins cluster"]
	t.Logf("plugins cluster: %d plugin splices, %d splices of Ingresses' plugins, %d full", cluster.PartialPlugins, cluster.PartialIngressPlugins, cluster.Full)
	// Edits leave plugins broken for a while (a configuration Kong refuses, a Secret
	// deleted), and every change of a broken plugin is a full Build.
	require.Greater(t, 2*cluster.PartialPlugins, cluster.Full, "plugin changes were hardly spliced")
}

// pluginTestCluster is pluginCluster at 60 Ingresses with what its plugins can also be: a
// KongPlugin configured from a Secret (configFrom) and one patched from a Secret
// (configPatches), both named by Ingresses, and a KongClusterPlugin with an instance name
// named by Ingresses of two namespaces (two instances of it). Its Ingresses are also more
// varied than pluginCluster's: every fourth has a second rule (another host, its paths
// listed against their routes' names' order), every eighth a third (no host), so that one
// Ingress's part of a plugin's entities is several routes in route-name order; and Ingresses
// 40-49 share the Services of 30-39, so that a change of one's plugins has the other in its
// closure.
func pluginTestCluster() *store.Snapshot {
	snap := pluginCluster(60)
	prefix := netv1.PathTypePrefix
	for i, ing := range snap.Ingresses {
		backend := ing.Spec.Rules[0].HTTP.Paths[0].Backend
		if i >= 40 && i < 50 {
			backend.Service = &netv1.IngressServiceBackend{Name: fmt.Sprintf("svc-%d", i-10), Port: backend.Service.Port}
			for j := range ing.Spec.Rules[0].HTTP.Paths {
				ing.Spec.Rules[0].HTTP.Paths[j].Backend = backend
			}
		}
		paths := func(ps ...string) *netv1.HTTPIngressRuleValue {
			var v netv1.HTTPIngressRuleValue
			for _, p := range ps {
				v.Paths = append(v.Paths, netv1.HTTPIngressPath{Path: p, PathType: &prefix, Backend: backend})
			}
			return &v
		}
		if i%4 == 1 {
			ing.Spec.Rules = append(ing.Spec.Rules, netv1.IngressRule{Host: fmt.Sprintf("alt-%d.example.com", i),
				IngressRuleValue: netv1.IngressRuleValue{HTTP: paths("/z", "/b", "/a")}})
		}
		if i%8 == 1 {
			ing.Spec.Rules = append(ing.Spec.Rules, netv1.IngressRule{
				IngressRuleValue: netv1.IngressRuleValue{HTTP: paths(fmt.Sprintf("/ing-%d/y", i), fmt.Sprintf("/ing-%d/x", i))}})
		}
	}
	secret := func(ns, name, value string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: objectMeta(ns, name, "1"), Data: map[string][]byte{"config": []byte(value)}}
	}
	snap.Secrets = append(snap.Secrets, secret("ns-1", "limits", "minute: 5\npolicy: local\n"),
		secret("ns-1", "limits-2", `{"second":2,"policy":"local"}`), secret("ns-2", "hour", "100"))
	snap.KongPlugins = append(snap.KongPlugins,
		&kongv1.KongPlugin{ObjectMeta: objectMeta("ns-1", "from-secret", "1"), PluginName: "rate-limiting",
			ConfigFrom: &kongv1.ConfigSource{SecretValue: kongv1.SecretValueFromSource{Secret: "limits", Key: "config"}}},
		&kongv1.KongPlugin{ObjectMeta: objectMeta("ns-2", "patched", "1"), PluginName: "rate-limiting",
			Config:        apiextensionsv1.JSON{Raw: []byte(`{"minute":1,"policy":"local"}`)},
			ConfigPatches: []kongv1.ConfigPatch{{Path: "/hour", ValueFrom: kongv1.ConfigSource{SecretValue: kongv1.SecretValueFromSource{Secret: "hour", Key: "config"}}}}},
	)
	snap.KongClusterPlugins = append(snap.KongClusterPlugins, &kongv1.KongClusterPlugin{
		ObjectMeta: metav1.ObjectMeta{Name: "shared", ResourceVersion: "1", UID: "uid-shared",
			Annotations: map[string]string{"kubernetes.io/ingress.class": "kong"}},
		PluginName: "cors", InstanceName: "cors", Config: apiextensionsv1.JSON{Raw: []byte(`{"origins":["https://a.example.com"]}`)},
	})
	for i, ing := range snap.Ingresses {
		switch i {
		case 21:
			ing.Annotations = map[string]string{annPlugins: "from-secret"}
		case 22:
			ing.Annotations = map[string]string{annPlugins: "patched,shared"}
		case 23, 24:
			ing.Annotations = map[string]string{annPlugins: "shared"}
		case 33, 41:
			ing.Annotations = map[string]string{annPlugins: "limit-1"}
		}
	}
	return snap
}

// pluginConfigs are configurations the editor gives plugins: valid for rate-limiting (most
// of the cluster's), for cors, for any plugin, and one Kong refuses.
var pluginConfigs = []string{`{"minute":7,"policy":"local"}`, `{"minute":8,"policy":"local"}`, `{"minute":9,"policy":"local"}`, `{"hour":90,"policy":"local"}`,
	`{"origins":["https://b.example.com"]}`, `{}`, `{"minute":-1}`}

// editPlugins makes one random change of the KongPlugins and KongClusterPlugins of s, the
// Secrets they read, or the konghq.com/plugins annotation of an Ingress.
func (e *editor) editPlugins(s *store.Snapshot) string {
	var objs []client.Object
	for _, p := range s.KongPlugins {
		objs = append(objs, p)
	}
	for _, p := range s.KongClusterPlugins {
		objs = append(objs, p)
	}
	i, ok := pick(e, objs)
	if !ok {
		return "no plugin"
	}
	old := objs[i]
	n := old.DeepCopyObject().(client.Object)
	n.SetResourceVersion(e.version())
	n.SetGeneration(n.GetGeneration() + 1)
	// The fields both kinds have.
	var (
		pluginName *string
		config     *apiextensionsv1.JSON
		disabled   *bool
		runOn      *string
		instance   *string
		protocols  *[]kongv1.KongProtocol
		ordering   **kong.PluginOrdering
		secrets    []string // the Secrets it reads, "ns/name"
	)
	switch p := n.(type) {
	case *kongv1.KongPlugin:
		pluginName, config, disabled, runOn, instance, protocols, ordering = &p.PluginName, &p.Config, &p.Disabled, &p.RunOn, &p.InstanceName, &p.Protocols, &p.Ordering
		if p.ConfigFrom != nil {
			secrets = append(secrets, p.Namespace+"/"+p.ConfigFrom.SecretValue.Secret)
		}
		for _, cp := range p.ConfigPatches {
			secrets = append(secrets, p.Namespace+"/"+cp.ValueFrom.SecretValue.Secret)
		}
	case *kongv1.KongClusterPlugin:
		pluginName, config, disabled, runOn, instance, protocols, ordering = &p.PluginName, &p.Config, &p.Disabled, &p.RunOn, &p.InstanceName, &p.Protocols, &p.Ordering
		if p.ConfigFrom != nil {
			secrets = append(secrets, p.ConfigFrom.SecretValue.Namespace+"/"+p.ConfigFrom.SecretValue.Secret)
		}
	}
	put := func() { replaceObject(s, old, n) }
	switch e.rng.IntN(17) {
	case 0, 1, 2:
		if len(config.Raw) > 0 || len(secrets) == 0 {
			config.Raw = []byte(pluginConfigs[e.rng.IntN(len(pluginConfigs))])
			put()
			return "plugin config"
		}
	case 3:
		*disabled = !*disabled
		put()
		return "plugin enabled"
	case 4:
		*protocols = [][]kongv1.KongProtocol{nil, {"http"}, {"https", "grpc"}, {"bad"}}[e.rng.IntN(4)]
		put()
		return "plugin protocols"
	case 5:
		*ordering = []*kong.PluginOrdering{nil, {Before: kong.PluginOrderingPhase{"access": {"key-auth"}}}}[e.rng.IntN(2)]
		*runOn = []string{"", "first"}[e.rng.IntN(2)]
		put()
		return "plugin ordering"
	case 6:
		*instance = []string{"", "one", "two"}[e.rng.IntN(3)]
		put()
		return "plugin instance name"
	case 7:
		// A Secret it reads rotated, deleted or created.
		if len(secrets) == 0 {
			break
		}
		name := secrets[e.rng.IntN(len(secrets))]
		for j, sec := range s.Secrets {
			if sec.Namespace+"/"+sec.Name == name {
				if e.rng.IntN(5) == 0 {
					s.Secrets = append(s.Secrets[:j], s.Secrets[j+1:]...)
					return "plugin Secret deleted"
				}
				c := sec.DeepCopy()
				c.ResourceVersion = e.version()
				c.Data = map[string][]byte{"config": []byte([]string{"minute: 9\npolicy: local\n", "100", "200", "{bad", `{"minute": -1}`}[e.rng.IntN(5)])}
				s.Secrets[j] = c
				return "plugin Secret rotated"
			}
		}
		ns, secretName, _ := strings.Cut(name, "/")
		s.Secrets = append(s.Secrets, &corev1.Secret{ObjectMeta: objectMeta(ns, secretName, e.version()), Data: map[string][]byte{"config": []byte("100")}})
		return "plugin Secret created"
	case 12, 13:
		// The configFrom of the cluster's from-secret switched to another Secret (existing
		// or not), or to a configuration.
		for j, p := range s.KongPlugins {
			if p.Namespace != "ns-1" || p.Name != "from-secret" {
				continue
			}
			c := p.DeepCopy()
			c.ResourceVersion = e.version()
			c.Generation++
			switch secret := []string{"limits", "limits-2", "limits-2", "other", ""}[e.rng.IntN(5)]; secret {
			case "":
				c.ConfigFrom, c.Config.Raw = nil, []byte(pluginConfigs[0])
			default:
				c.ConfigFrom, c.Config.Raw = &kongv1.ConfigSource{SecretValue: kongv1.SecretValueFromSource{Secret: secret, Key: "config"}}, nil
			}
			s.KongPlugins[j] = c
			return "plugin configFrom"
		}
	case 15:
		// Deleted and created again between two rounds: a new UID.
		n.SetUID(types.UID("uid-again-" + e.version()))
		*disabled = !*disabled
		put()
		return "plugin created again"
	case 8:
		*pluginName = []string{"rate-limiting", "cors", "correlation-id", "custom-thing"}[e.rng.IntN(4)]
		put()
		return "plugin name"
	case 9:
		if p, ok := n.(*kongv1.KongClusterPlugin); ok {
			if p.Labels[labelGlobal] == "true" {
				delete(p.Labels, labelGlobal)
			} else {
				p.Labels = map[string]string{labelGlobal: "true"}
			}
			put()
			return "plugin global label"
		}
	case 10:
		// Deleted while (perhaps) referenced.
		switch p := old.(type) {
		case *kongv1.KongPlugin:
			s.KongPlugins = slices.DeleteFunc(s.KongPlugins, func(o *kongv1.KongPlugin) bool { return o == p })
		case *kongv1.KongClusterPlugin:
			s.KongClusterPlugins = slices.DeleteFunc(s.KongClusterPlugins, func(o *kongv1.KongClusterPlugin) bool { return o == p })
		}
		return "plugin deleted"
	case 11, 14:
		// Created: a name the cluster's Ingresses may name but that is missing, or a new one.
		name := []string{"limit-0", "limit-1", "shared", "missing", fmt.Sprintf("new-%d", e.rv)}[e.rng.IntN(5)]
		cfg := apiextensionsv1.JSON{Raw: []byte(`{"minute":3,"policy":"local"}`)}
		if e.rng.IntN(2) == 0 {
			s.KongPlugins = append(s.KongPlugins, &kongv1.KongPlugin{ObjectMeta: objectMeta(fmt.Sprintf("ns-%d", e.rng.IntN(3)), name, e.version()), PluginName: "rate-limiting", Config: cfg})
		} else {
			m := objectMeta("", name, e.version())
			m.Annotations = map[string]string{"kubernetes.io/ingress.class": "kong"}
			s.KongClusterPlugins = append(s.KongClusterPlugins, &kongv1.KongClusterPlugin{ObjectMeta: m, PluginName: "rate-limiting", Config: cfg})
		}
		unique(s)
		return "plugin created"
	default:
		// An Ingress's konghq.com/plugins.
		ing, j, ok := e.ingressVersion(s)
		if !ok {
			break
		}
		if ing.Annotations == nil {
			ing.Annotations = map[string]string{}
		}
		ing.Annotations[annPlugins] = []string{"limit-0", "limit-1,limit-2", "shared", "missing", "from-secret"}[e.rng.IntN(5)]
		if e.rng.IntN(4) == 0 {
			delete(ing.Annotations, annPlugins)
		}
		s.Ingresses[j] = ing
		return "Ingress plugins"
	}
	return "nothing to edit"
}

// A plugin's plugin name changed to that of another plugin attached to the same routes: a
// full Build leaves one of the two out (one plugin of a name per entity), so the change is not
// spliced, and the result is a full Build's. Then the plugin left out (whose problem names it
// with its UID) deleted and created again with another configuration: not spliced either.
func TestIncrementalPluginNameChangedOntoAnother(t *testing.T) {
	snap := pluginTestCluster()
	inc := &Incremental{noSizeLimit: true}
	renderer := &kongstate.Renderer{}
	requireSameResult(t, "start", renderer, inc.Build(snap, Options{}), Build(snap, Options{}))
	// shared, a cors plugin, becomes a rate-limiting one, as patched is on Ingress 22.
	shared := func(snap *store.Snapshot, uid, config string) *store.Snapshot {
		next := *snap
		next.KongClusterPlugins = append([]*kongv1.KongClusterPlugin(nil), snap.KongClusterPlugins...)
		for i, p := range next.KongClusterPlugins {
			if p.Name == "shared" {
				c := p.DeepCopy()
				c.ResourceVersion, c.UID, c.PluginName, c.Config.Raw = "v-"+uid+config, types.UID(uid), "rate-limiting", []byte(config)
				next.KongClusterPlugins[i] = c
			}
		}
		return &next
	}
	renamed := shared(snap, "uid-shared", `{"minute":4,"policy":"local"}`)
	want := Build(renamed, Options{})
	require.NotEmpty(t, want.Problems, "the two plugins of one name on Ingress 22's routes")
	requireSameResult(t, "renamed", renderer, inc.Build(renamed, Options{}), want)
	require.Equal(t, "a plugin's plugin name changed", inc.Stats.LastReason)

	again := shared(renamed, "uid-shared-again", `{"minute":5,"policy":"local"}`)
	requireSameResult(t, "created again", renderer, inc.Build(again, Options{}), Build(again, Options{}))
	require.Equal(t, "a plugin of the change was created again", inc.Stats.LastReason)
}

// TestIncrementalMatchesBuildWithIngressPlugins is TestIncrementalMatchesBuild on
// pluginTestCluster, its Ingresses created at different times (so that their age, not their
// name, orders them and the plugins they name), with edits mostly of Ingresses'
// konghq.com/plugins: plugins added, removed, reordered and named twice, KongPlugins of
// other namespaces (refused without a ReferenceGrant) and missing ones named, two plugins of
// one plugin name named together, a KongClusterPlugin with an instance name named from
// several namespaces, and Ingresses with plugins added, deleted and created again (younger
// than the others). It fails when those changes are not spliced (the property would then
// hold trivially), and when the splice puts an entity elsewhere than a full Build does.
func TestIncrementalMatchesBuildWithIngressPlugins(t *testing.T) {
	snap := pluginTestCluster()
	for i, ing := range snap.Ingresses {
		ing.CreationTimestamp = metav1.Unix(int64(1000+(i*37)%23), 0)
	}
	starts := []translationStart{{"plugins cluster", snap, Options{}}}
	for _, s := range goldenStarts(t) {
		if s.name == "plugins" || s.name == "remote-plugins" {
			starts = append(starts, s)
		}
	}
	steps := 300
	if testing.Short() {
		steps = 100
	}
	moved := 0 // splices in the cluster after which two plugins' blocks are in another order
	stats, reasons := matchBuildRounds(t, starts, steps, 64, func(ed *editor) {
		ed.ingressPluginsMostly = true
		ed.observe = func(s translationStart, _ string, before, after IncrementalStats, prev, got Result) {
			if s.name == "plugins cluster" && after.PartialIngressPlugins > before.PartialIngressPlugins && pluginBlocksMoved(prev, got) {
				moved++
			}
		}
	})
	t.Logf("full because: %v", reasons)
	cluster := stats["plugins cluster"]
	t.Logf("plugins cluster: %d splices of Ingresses' plugins (%d moving blocks), %d full", cluster.PartialIngressPlugins, moved, cluster.Full)
	require.Greater(t, cluster.PartialIngressPlugins, cluster.Full, "Ingresses' plugins were hardly spliced")
	require.GreaterOrEqual(t, moved, steps/30, "hardly a splice put plugins' blocks in another order")
}

// pluginBlocksMoved says whether two plugin sources that have entities in both prev and got
// are in another order in got.
func pluginBlocksMoved(prev, got Result) bool {
	type source struct {
		obj    objgraph.Node
		source string
		global bool
	}
	order := func(r Result) []source {
		var out []source
		for _, b := range blocksOf(r.State.Plugins, r.parts.plugins.origins) {
			o := b.origins[0]
			out = append(out, source{o.obj, o.source, o.global})
		}
		return out
	}
	before, after := order(prev), order(got)
	both := func(in, other []source) []source {
		return slices.DeleteFunc(slices.Clone(in), func(s source) bool { return !slices.Contains(other, s) })
	}
	return !slices.Equal(both(before, after), both(after, before))
}

// ingressPluginLists are the konghq.com/plugins values editIngressPlugins gives Ingresses.
// Those that a full Build answers with a plugin left out (two of a plugin name on one route)
// or a global plugin are rarer: a change of the Ingresses naming them is a full Build.
var ingressPluginLists = []string{"limit-0", "limit-1", "limit-2", "shared", "limit-0,shared", "shared,limit-1", "missing",
	"from-secret", "patched", "ns-1:limit-0", "ns-2:shared", "", "limit-2", "limit-1,shared", "shared,limit-0", "limit-0",
	":limit-1,limit-0", "limit-2:,shared,limit-1", "limit-0,limit-0", "limit-0,limit-1", "correlation"}

// editIngressPlugins makes one random change of an Ingress's konghq.com/plugins, or adds,
// deletes or creates again an Ingress with plugins.
func (e *editor) editIngressPlugins(s *store.Snapshot) string {
	ing, j, ok := e.ingressVersion(s)
	if !ok {
		return "no Ingress"
	}
	if ing.Annotations == nil {
		ing.Annotations = map[string]string{}
	}
	list := ingressPluginLists[e.rng.IntN(len(ingressPluginLists))]
	if e.rng.IntN(3) > 0 {
		list = ingressPluginLists[e.rng.IntN(len(ingressPluginLists)-3)]
	}
	switch e.rng.IntN(8) {
	case 0:
		delete(ing.Annotations, annPlugins)
		s.Ingresses[j] = ing
		return "Ingress plugins removed"
	case 1:
		ing.Name = fmt.Sprintf("%s-copy%d", ing.Name, e.rv)
		ing.UID = types.UID(fmt.Sprintf("uid-%d", e.rv))
		ing.Annotations[annPlugins] = list
		s.Ingresses = append(s.Ingresses, ing)
		return "Ingress with plugins added"
	case 2:
		s.Ingresses = slices.Delete(s.Ingresses, j, j+1)
		return "Ingress with plugins deleted"
	case 3:
		ing.UID = types.UID(fmt.Sprintf("uid-%d", e.rv))
		ing.CreationTimestamp = metav1.Unix(int64(2000+e.rv), 0)
		ing.Annotations[annPlugins] = list
		s.Ingresses[j] = ing
		return "Ingress with plugins created again"
	default:
		ing.Annotations[annPlugins] = list
		s.Ingresses[j] = ing
		return "Ingress plugins"
	}
}

// An Ingress given konghq.com/plugins naming two plugins younger Ingresses of its namespace
// name, in the other order (their blocks change places), then only one of them, is spliced:
// the result is a full Build's, and every entity but the Ingress's is the previous one, the
// same pointer. A plugin that something other than Ingresses also names (a Service, a
// KongConsumer, a TCPIngress, an HTTPRoute), an Ingress naming a global KongClusterPlugin, a
// plugin named twice by one Ingress (its second entity left out), and plugins, Secrets or
// consumers changed in the annotation's round are full Builds, for the reason given.
// Malformed entries (":correlation", which would name the global plugin) name nothing. Two
// plugins of one instance name on the same routes (their entities' instance names alike) is
// spliced, as a full Build keeps both names; two entities of one plugin whose short instance
// names clash are a full Build.
func TestIncrementalIngressPluginsKeepOtherEntities(t *testing.T) {
	snap := pluginCluster(40)
	for _, p := range snap.KongPlugins {
		if p.Namespace == "ns-0" && p.Name == "limit-1" { // another plugin name than limit-0's
			p.PluginName, p.Config.Raw = "cors", []byte(`{"origins":["https://a.example.com"]}`)
		}
	}
	for i, ing := range snap.Ingresses {
		ing.CreationTimestamp = metav1.Unix(int64(100+i), 0)
		switch i {
		case 20:
			ing.Annotations = map[string]string{annPlugins: "limit-0"}
		case 30:
			ing.Annotations = map[string]string{annPlugins: "limit-1"}
		default:
			ing.Annotations = nil
		}
	}
	// changed is snap with change made to a copy of it.
	changed := func(snap *store.Snapshot, change func(*store.Snapshot)) *store.Snapshot {
		next := *snap
		change(&next)
		return &next
	}
	// annotated is snap with Ingress i's konghq.com/plugins set to plugins.
	annotated := func(snap *store.Snapshot, i int, plugins string) *store.Snapshot {
		return changed(snap, func(next *store.Snapshot) {
			next.Ingresses = slices.Clone(snap.Ingresses)
			ing := next.Ingresses[i].DeepCopy()
			ing.ResourceVersion += "-2"
			ing.Annotations = map[string]string{annPlugins: plugins}
			next.Ingresses[i] = ing
		})
	}
	withService := changed(snap, func(next *store.Snapshot) {
		next.Services = slices.Clone(snap.Services)
		for j, s := range next.Services {
			if s.Namespace == "ns-0" && s.Name == "svc-30" {
				s = s.DeepCopy()
				s.ResourceVersion += "-2"
				s.Annotations = map[string]string{annPlugins: "limit-1"}
				next.Services[j] = s
			}
		}
	})
	consumer, credential := benchConsumer(0, 0)
	withConsumer := changed(snap, func(next *store.Snapshot) {
		kc := consumer.DeepCopy()
		kc.Annotations = map[string]string{"kubernetes.io/ingress.class": "kong", annPlugins: "limit-1"}
		next.KongConsumers, next.Secrets = []*kongv1.KongConsumer{kc}, append(slices.Clone(snap.Secrets), credential)
	})
	withTCPIngress := changed(snap, func(next *store.Snapshot) {
		// Its own Service: one of Ingresses' would be taken from them.
		svc := snap.Services[30].DeepCopy()
		svc.Name, svc.UID = "tcp-backend", "uid-tcp-backend"
		next.Services = append(slices.Clone(snap.Services), svc)
		next.TCPIngresses = []*kongv1beta1.TCPIngress{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns-0", Name: "tcp", UID: "uid-tcp", ResourceVersion: "1",
				Annotations: map[string]string{"kubernetes.io/ingress.class": "kong", annPlugins: "limit-1"}},
			Spec: kongv1beta1.TCPIngressSpec{Rules: []kongv1beta1.IngressRule{{Port: 9000,
				Backend: kongv1beta1.IngressBackend{ServiceName: "tcp-backend", ServicePort: 80}}}},
		}}
	})
	withHTTPRoute := changed(snap, func(next *store.Snapshot) {
		gateway := routeCluster(0, false)
		next.GatewayClasses, next.Gateways = gateway.GatewayClasses, gateway.Gateways
		port, gwNS, section, path := gatewayv1.PortNumber(80), gatewayv1.Namespace("default"), gatewayv1.SectionName("http"), "/route"
		prefix := gatewayv1.PathMatchPathPrefix
		next.HTTPRoutes = []*gatewayv1.HTTPRoute{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns-0", Name: "route", Generation: 1, ResourceVersion: "1", UID: "uid-route",
				Annotations: map[string]string{annPlugins: "limit-1"}},
			Spec: gatewayv1.HTTPRouteSpec{
				CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "kong", Namespace: &gwNS, SectionName: &section}}},
				Rules: []gatewayv1.HTTPRouteRule{{
					Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: &prefix, Value: &path}}},
					BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
						BackendObjectReference: gatewayv1.BackendObjectReference{Name: "svc-30", Port: &port}}}},
				}},
			}}}
	})
	// limit-0 and limit-1 given the instance name "one".
	oneInstance := changed(snap, func(next *store.Snapshot) {
		next.KongPlugins = slices.Clone(snap.KongPlugins)
		for j, p := range next.KongPlugins {
			if p.Namespace == "ns-0" && (p.Name == "limit-0" || p.Name == "limit-1") {
				p = p.DeepCopy()
				p.InstanceName = "one"
				next.KongPlugins[j] = p
			}
		}
	})
	// limit-0 given the instance name "one", and Ingresses 10 and 20 hosts that make their
	// routes' entities of it the same short instance name (the first 9 hex digits of the
	// hashes of their relations are alike, found by search): the younger's gets the long one.
	instanceClash := changed(snap, func(next *store.Snapshot) {
		next.KongPlugins = slices.Clone(snap.KongPlugins)
		for j, p := range next.KongPlugins {
			if p.Namespace == "ns-0" && p.Name == "limit-0" {
				p = p.DeepCopy()
				p.InstanceName = "one"
				next.KongPlugins[j] = p
			}
		}
		next.Ingresses = slices.Clone(snap.Ingresses)
		for i, host := range map[int]string{10: "a1020116.example.com", 20: "b87599.example.com"} {
			ing := next.Ingresses[i].DeepCopy()
			ing.Spec.Rules[0].Host = host
			next.Ingresses[i] = ing
		}
	})
	pluginChanged := func(next *store.Snapshot) {
		next.KongPlugins = slices.Clone(next.KongPlugins)
		for j, p := range next.KongPlugins {
			if p.Namespace == "ns-0" && p.Name == "limit-0" {
				next.KongPlugins[j] = benchPlugin(0, 0, 1)
			}
		}
	}
	secretChanged := func(next *store.Snapshot) {
		_, rotated := benchConsumer(0, 1)
		next.Secrets = append(slices.DeleteFunc(slices.Clone(next.Secrets), func(s *corev1.Secret) bool { return s.Name == rotated.Name }), rotated)
	}
	consumerChanged := func(next *store.Snapshot) {
		kc := next.KongConsumers[0].DeepCopy()
		kc.ResourceVersion += "-2"
		kc.CustomID = "custom"
		next.KongConsumers = []*kongv1.KongConsumer{kc}
	}
	withCredential := changed(snap, func(next *store.Snapshot) {
		next.KongConsumers, next.Secrets = []*kongv1.KongConsumer{consumer}, append(slices.Clone(snap.Secrets), credential)
	})
	longName := false
	for _, p := range Build(annotated(instanceClash, 10, "limit-0"), Options{}).State.Plugins {
		longName = longName || len(str(p.InstanceName)) > len("one-")+9
	}
	require.True(t, longName, "the instance names of limit-0 do not clash")
	type step struct {
		name   string
		snap   *store.Snapshot
		reason string // of the full Build, "" when spliced
	}
	for _, tc := range []struct {
		name  string
		start *store.Snapshot
		steps []step
	}{
		{"spliced", snap, []step{
			{"Ingress 10 names limit-1 and limit-0", annotated(snap, 10, "limit-1,limit-0"), ""},
			{"and names limit-0 only", annotated(annotated(snap, 10, "limit-1,limit-0"), 10, "limit-0"), ""},
		}},
		{"malformed entries", snap, []step{
			{"Ingress 10 names :correlation, limit-0 and correlation:", annotated(snap, 10, ":correlation,limit-0,correlation:"), ""},
		}},
		{"named by a Service", withService, []step{
			{"Ingress 10 names limit-1", annotated(withService, 10, "limit-1"), "a plugin of the change is named by a Service"},
		}},
		{"named by a KongConsumer", withConsumer, []step{
			{"Ingress 10 names limit-1", annotated(withConsumer, 10, "limit-1"), "a plugin of the change is named by a KongConsumer"},
		}},
		{"named by a TCPIngress", withTCPIngress, []step{
			{"Ingress 10 names limit-1", annotated(withTCPIngress, 10, "limit-1"), "a plugin of the change is named by a TCPIngress"},
		}},
		{"named by an HTTPRoute", withHTTPRoute, []step{
			{"Ingress 10 names limit-1", annotated(withHTTPRoute, 10, "limit-1"), "a plugin of the change is named by a HTTPRoute"},
		}},
		{"global", snap, []step{
			{"Ingress 10 names the global one", annotated(snap, 10, "correlation"), "an Ingress of the change may name a global plugin"},
		}},
		{"named twice", snap, []step{
			{"Ingress 10 names limit-1 twice", annotated(snap, 10, "limit-1,limit-1"), "a plugin entity of the closure was left out as another's duplicate"},
		}},
		{"one instance name", oneInstance, []step{
			{"Ingress 10 names limit-1 and limit-0", annotated(oneInstance, 10, "limit-1,limit-0"), ""},
		}},
		{"instance names clash", instanceClash, []step{
			{"Ingress 10 names limit-0", annotated(instanceClash, 10, "limit-0"), "a plugin of the change has instance names that clash"},
		}},
		{"a plugin changed too", snap, []step{
			{"Ingress 10 names limit-0", changed(annotated(snap, 10, "limit-0"), pluginChanged), "Ingresses' plugins changed with plugins, Secrets or consumers"},
		}},
		{"a Secret changed too", withCredential, []step{
			{"Ingress 10 names limit-0", changed(annotated(withCredential, 10, "limit-0"), secretChanged), "Ingresses' plugins changed with plugins, Secrets or consumers"},
		}},
		{"a consumer changed too", withCredential, []step{
			{"Ingress 10 names limit-0", changed(annotated(withCredential, 10, "limit-0"), consumerChanged), "Ingresses' plugins changed with plugins, Secrets or consumers"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inc := &Incremental{noSizeLimit: true}
			renderer := &kongstate.Renderer{}
			prev := inc.Build(tc.start, Options{})
			require.Equal(t, "first translation", inc.Stats.LastReason)
			if strings.HasPrefix(tc.name, "named by") {
				// limit-1 (cors) has an entity on other than an Ingress's route alone.
				other := false
				for i, p := range prev.State.Plugins {
					other = other || str(p.Name) == "cors" && (p.Consumer != nil || prev.parts.plugins.origins[i].by == nil)
				}
				require.True(t, other, "the other referrer has no entity of limit-1: %v", prev.Problems)
			}
			for _, s := range tc.steps {
				full := inc.Stats.Full
				got := inc.Build(s.snap, Options{})
				requireSameResult(t, s.name, renderer, got, Build(s.snap, Options{}))
				if s.reason != "" {
					require.Equal(t, full+1, inc.Stats.Full, s.name)
					require.Equal(t, s.reason, inc.Stats.LastReason, s.name)
					continue
				}
				require.Equal(t, full, inc.Stats.Full, "%s: %s", s.name, inc.Stats.LastReason)
				kept := 0
				for _, p := range got.State.Plugins {
					if p.Route != nil && strings.Contains(str(p.Route.ID), ".ing-10.") {
						continue // the changed Ingress's
					}
					require.True(t, slices.Contains(prev.State.Plugins, p), "%s: %s on %v made again", s.name, str(p.Name), p.Route)
					kept++
				}
				require.Equal(t, 3, kept, "%s: the other Ingresses' entities and the global one", s.name)
				prev = got
			}
		})
	}
}
