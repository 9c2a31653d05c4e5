package translator

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/manifest"
	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/store"
)

// TestEveryReadIsRecorded runs every source under the object graph's record: for each golden
// case and each object in it, the case is translated without that object, and everything
// that changed (Kong entities, by the object their tags name, and problems, by the object
// they name) must belong to an object the graph says the removed one reaches (Reaches). A
// source that reads an object without recording the edge makes its output change with no
// edge to explain it, and this test names the source's object and the one it read.
func TestEveryReadIsRecorded(t *testing.T) {
	eachGoldenCase(t, func(t *testing.T, dir string) {
		objs, err := manifest.Load(filepath.Join(dir, "in.yaml"))
		require.NoError(t, err)
		opts := readGoldenOptions(t, dir)
		st, err := store.NewForObjects(objs, store.Options{IngressClass: opts.IngressClass})
		require.NoError(t, err)
		snap, err := st.Snapshot(t.Context())
		require.NoError(t, err)
		requireEveryReadRecorded(t, snap, opts.Translator)
	})
}

// TestEveryReadIsRecordedRandomly is TestEveryReadIsRecorded over the fuzz generator's
// snapshots (objectGen: objects of every kind referring to each other from small pools of
// names, with good and bad values), where objects meet in ways no golden case wrote down.
func TestEveryReadIsRecordedRandomly(t *testing.T) {
	cert, err := newTestCertPEM()
	require.NoError(t, err)
	// make test-reads sets more cases, and a seed of its own.
	cases, seed := 2000, uint64(5)
	if n, err := strconv.Atoi(os.Getenv("KONDUCTOR_READS_CASES")); err == nil {
		cases = n
	}
	if n, err := strconv.ParseUint(os.Getenv("KONDUCTOR_READS_SEED"), 10, 64); err == nil {
		seed = n
	}
	t.Logf("%d snapshots from seed %d", cases, seed)
	rng := rand.New(rand.NewPCG(seed, 8))
	for i := range cases {
		data := make([]byte, 64+rng.IntN(512))
		for j := range data {
			data[j] = byte(rng.IntN(256))
		}
		g := &objectGen{data: data, cert: cert, rotated: cert}
		opts := g.options()
		snap := g.snapshot()
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			requireEveryReadRecorded(t, snap, opts)
			if t.Failed() {
				t.Logf("snapshot %d of seed %d: %s", i, seed, describe(snap))
			}
		})
	}
}

// requireEveryReadRecorded translates snap without each of its objects in turn and requires
// everything that changes to belong to an object the graph says the removed one reaches.
func requireEveryReadRecorded(t *testing.T, snap *store.Snapshot, opts Options) {
	t.Helper()
	before := Build(snap, opts)
	objs := snapshotObjects(snap)
	for _, gone := range objs {
		after := Build(snapshotWithout(snap, gone), opts)
		reached := reachedBy(before.Graph, after.Graph, objs, gone)
		for _, e := range changedEntities(t, before, after) {
			if !slices.ContainsFunc(e.owners, func(o string) bool { return reached[o] }) && !reached[e.ownerKind] {
				t.Errorf("without %s, an entity of %v changes, and the graph has no path to them: a source read it without recording the edge (%.300s)",
					Reaches(gone)[0], e.owners, e.json)
			}
		}
	}
}

// snapshotObjects are the objects snap's slices list, and its Namespaces (as the store reads
// them, metadata).
func snapshotObjects(snap *store.Snapshot) []client.Object {
	var out []client.Object
	for _, ns := range slices.Sorted(maps.Keys(snap.NamespaceLabels)) {
		out = append(out, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: snap.NamespaceLabels[ns]}})
	}
	v := reflect.ValueOf(snap).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if f.Kind() != reflect.Slice || !f.Type().Elem().Implements(objectType) || v.Type().Field(i).Name == "SecretsPending" || v.Type().Field(i).Name == "ConfigMapsPending" {
			continue
		}
		for j := 0; j < f.Len(); j++ {
			out = append(out, f.Index(j).Interface().(client.Object))
		}
	}
	return out
}

// snapshotWithout is snap without the object gone.
func snapshotWithout(snap *store.Snapshot, gone client.Object) *store.Snapshot {
	out := *snap
	if ns, isNamespace := gone.(*metav1.PartialObjectMetadata); isNamespace {
		out.NamespaceLabels = maps.Clone(snap.NamespaceLabels)
		delete(out.NamespaceLabels, ns.Name)
		return &out
	}
	v := reflect.ValueOf(&out).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if f.Kind() != reflect.Slice || !f.Type().Elem().Implements(objectType) {
			continue
		}
		kept := reflect.MakeSlice(f.Type(), 0, f.Len())
		for j := 0; j < f.Len(); j++ {
			if f.Index(j).Interface().(client.Object) != gone {
				kept = reflect.Append(kept, f.Index(j))
			}
		}
		f.Set(kept)
	}
	return &out
}

// reachedBy is what removing gone may change, by the graphs before and after: the objects
// it reaches (Reaches), those that depend on them (Graph.Dependents, before), the other
// objects that name a Service one of those names, and what all those read on their behalf,
// directly or through others, before or after (a Service and the KongUpstreamPolicy it
// names are translated for the Ingress that names the Service; an Ingress whose default
// backend is served once gone's is not reads its Service after only). An EndpointSlice is
// reached with its Service. Each object counts by its owner key, and each kind reached by
// its kind alone too, for entities that carry no tags (entity.ownerKind).
func reachedBy(before, after *objgraph.Graph, objs []client.Object, gone client.Object) map[string]bool {
	reached := map[string]bool{}
	seen := map[kongstate.ObjectRef]bool{}
	var down func(g *objgraph.Graph, r kongstate.ObjectRef)
	down = func(g *objgraph.Graph, r kongstate.ObjectRef) {
		reached[ownerKey(r.Kind, r.Namespace, r.Name)] = true
		reached[r.Kind] = true
		seen[r] = true
		for _, to := range g.References(r) {
			if !seen[to] {
				down(g, to)
			}
		}
	}
	for _, g := range []*objgraph.Graph{before, after} {
		clear(seen)
		for _, d := range before.Dependents(Reaches(gone)...) {
			down(g, d)
			// Objects that name one Service share what is made of it: its Kong service (one
			// per Service and port, for every Ingress naming it; the incremental closure
			// takes them together, splice_closure.go), its plugins, looked up once and, when
			// one cannot be applied, leaving out every object that names the Service.
			for _, s := range g.References(d) {
				if s.Kind == gvkService.Kind && s.Group == "" {
					for _, sibling := range g.ReferredBy(s) {
						down(g, sibling)
					}
				}
			}
		}
	}
	for _, o := range objs {
		reaches := Reaches(o)
		for _, r := range reaches[1:] {
			if reached[ownerKey(r.Kind, r.Namespace, r.Name)] {
				reached[ownerKey(reaches[0].Kind, o.GetNamespace(), o.GetName())] = true
			}
		}
	}
	return reached
}

// buildObjects is Build on a store holding objs.
func buildObjects(t *testing.T, objs []client.Object, opts goldenOptions) Result {
	t.Helper()
	st, err := store.NewForObjects(objs, store.Options{IngressClass: opts.IngressClass})
	require.NoError(t, err)
	snap, err := st.Snapshot(t.Context())
	require.NoError(t, err)
	return Build(snap, opts.Translator)
}

func ownerKey(kind, namespace, name string) string { return kind + " " + namespace + "/" + name }

// entity is a Kong entity or a problem, as JSON (a Kong entity without the entities nested in
// it), with the objects it is the translation of: those its k8s-* tags name, those of the
// entities it is nested in or that are nested in it (a Kong service is there for its routes'
// Ingresses; a credential, for its consumer), and for a plugin those of the service, route,
// consumer or consumer group it is attached to. A problem's owner is the object it names.
type entity struct {
	json   string
	owners []string
	// ownerKind is the kind of object that makes an entity that carries no tags and names
	// no entity that does (a license, a custom entity), "" for others.
	ownerKind string
}

// untaggedOwners are the kinds that make entities without tags, by the entities' kind; any
// other entity kind is a KongCustomEntity's.
var untaggedOwners = map[string]string{"licenses": "KongLicense"}

// changedEntities are the entities of a that b does not have and those of b that a does not.
func changedEntities(t *testing.T, a, b Result) []entity {
	ea, eb := entitiesOf(t, a), entitiesOf(t, b)
	count := map[string]int{}
	for _, e := range eb {
		count[e.json]++
	}
	var out []entity
	for _, e := range ea {
		if count[e.json] > 0 {
			count[e.json]--
			continue
		}
		out = append(out, e)
	}
	for _, e := range eb {
		if count[e.json] > 0 {
			count[e.json]--
			out = append(out, e)
		}
	}
	return out
}

// entitiesOf is a result's entities.
func entitiesOf(t *testing.T, r Result) []entity {
	t.Helper()
	cfg, err := r.State.DeclarativeConfig()
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(cfg, &doc))
	type found struct {
		kind     string
		path     string // the entities it is nested in, by kind and name
		m, own   map[string]any
		owners   map[string]bool
		children []*found
	}
	var all, top []*found
	byRef := map[string]*found{} // kind, then id or name -> the entity
	var walk func(kind string, v any, path string) []*found
	walk = func(kind string, v any, path string) []*found {
		list, _ := v.([]any)
		var out []*found
		for _, e := range list {
			m, ok := e.(map[string]any)
			if !ok {
				continue
			}
			f := &found{kind: kind, path: path, m: m, own: map[string]any{}, owners: map[string]bool{}}
			all = append(all, f)
			out = append(out, f)
			if o := tagOwner(m); o != "" {
				f.owners[o] = true
			}
			for _, k := range []string{"id", "name", "username"} {
				if s, ok := m[k].(string); ok {
					byRef[kind+" "+s] = f
				}
			}
			for k, v := range m {
				if l, ok := v.([]any); ok && len(l) > 0 {
					if _, nested := l[0].(map[string]any); nested {
						f.children = append(f.children, walk(k, v, fmt.Sprintf("%s%s %v > ", path, kind, m["name"]))...)
						continue
					}
				}
				f.own[k] = v
			}
			// A parent is there for its children (a Kong service for its routes).
			for _, c := range f.children {
				maps.Copy(f.owners, c.owners)
			}
		}
		return out
	}
	for _, k := range slices.Sorted(maps.Keys(doc)) {
		top = append(top, walk(k, doc[k], "")...)
	}
	// An upstream is there for the Kong services that send to it.
	for _, f := range all {
		if host, ok := f.m["host"].(string); ok && f.kind == "services" {
			if u := byRef["upstreams "+host]; u != nil {
				maps.Copy(u.owners, f.owners)
			}
		}
	}
	// An entity that names another (a plugin its route, an SNI its certificate) is there for it.
	refKinds := map[string]string{"service": "services", "route": "routes", "consumer": "consumers",
		"consumer_group": "consumer_groups", "certificate": "certificates"}
	for _, f := range all {
		for field, kind := range refKinds {
			named := []any{f.m[field]}
			if m, ok := named[0].(map[string]any); ok {
				named = []any{m["id"], m["name"]}
			}
			for _, n := range named {
				if s, ok := n.(string); ok {
					if to := byRef[kind+" "+s]; to != nil {
						maps.Copy(f.owners, to.owners)
					}
				}
			}
		}
	}
	// A child is its parent's too (a target, its upstream's).
	var down func(f *found)
	down = func(f *found) {
		for _, c := range f.children {
			maps.Copy(c.owners, f.owners)
			down(c)
		}
	}
	for _, f := range top {
		down(f)
	}
	var out []entity
	for _, f := range all {
		j, err := json.Marshal(f.own)
		require.NoError(t, err)
		if f.kind == "upstreams" && string(j) == `{"name":"kong"}` {
			continue // kongstate's stub upstream of an empty configuration
		}
		e := entity{json: f.path + f.kind + " " + string(j), owners: slices.Sorted(maps.Keys(f.owners))}
		if tagOwner(f.m) == "" {
			e.ownerKind = untaggedOwners[f.kind]
			if e.ownerKind == "" {
				e.ownerKind = "KongCustomEntity"
			}
		}
		out = append(out, e)
	}
	for _, p := range r.Problems {
		out = append(out, entity{json: "problem " + p.String(), owners: []string{ownerKey(p.Object.Kind, p.Object.Namespace, p.Object.Name)}})
	}
	return out
}

// tagOwner is the object an entity's k8s-* tags name, "" when they name none.
func tagOwner(m map[string]any) string {
	tags, _ := m["tags"].([]any)
	var kind, namespace, name string
	for _, t := range tags {
		s, _ := t.(string)
		switch {
		case strings.HasPrefix(s, kongstate.TagKind):
			kind = strings.TrimPrefix(s, kongstate.TagKind)
		case strings.HasPrefix(s, kongstate.TagNamespace):
			namespace = strings.TrimPrefix(s, kongstate.TagNamespace)
		case strings.HasPrefix(s, kongstate.TagName):
			name = strings.TrimPrefix(s, kongstate.TagName)
		}
	}
	if kind == "" {
		return ""
	}
	return ownerKey(kind, namespace, name)
}
