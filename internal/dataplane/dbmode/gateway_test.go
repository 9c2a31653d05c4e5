package dbmode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/manifest"
)

var ctx = context.Background()

func TestFirstSyncCreatesThenNothingChanges(t *testing.T) {
	e, g := newKong(t, Options{})
	s := translate(t, objects(apps(3)...))

	require.NoError(t, g.Sync(ctx, target(s)))
	require.Len(t, e.Entities("services"), 3)
	require.Len(t, e.Entities("routes"), 3)
	require.Len(t, e.Entities("upstreams"), 3)
	require.Len(t, e.Entities("targets"), 3)
	for _, kind := range []string{"services", "routes", "upstreams", "targets"} {
		for _, ent := range e.Entities(kind) {
			require.Contains(t, ent["tags"], DefaultFilterTag, "%s %v carries the filter tag", kind, ent["name"])
		}
	}
	// Services and routes keep the translator's (KIC's) deterministic IDs.
	for _, svc := range s.Services {
		require.NotNil(t, e.Entity("services", *svc.ID), "service %s under its ID", *svc.Name)
		for _, r := range svc.Routes {
			require.NotNil(t, e.Entity("routes", *r.ID), "route %s under its ID", *r.Name)
		}
	}

	// Nothing changed: no write, and no read but the list calls (GET / aside, which the
	// dump makes to learn the version and whether consumer groups exist).
	mark, before := e.AuditMark(), e.Requests()
	require.NoError(t, g.Sync(ctx, target(s)))
	require.Empty(t, e.AuditSince(mark))
	for req := range nonListRequests(before, e.Requests()) {
		require.Equal(t, "GET /", req)
	}
}

// TestAdoptsKICManagedKong writes the entities as KIC (through decK) would have written
// them, with the same names, IDs and tags, then syncs: not one create or delete.
func TestAdoptsKICManagedKong(t *testing.T) {
	e, g := newKong(t, Options{})
	s := translate(t, objects(apps(5)...))
	writeAsKIC(t, e, s)
	require.Len(t, e.Entities("services"), 5)
	mark := requireAdopted(t, e, g, s)
	// Nothing differs either, so nothing at all is written.
	require.Empty(t, e.AuditSince(mark))
}

// requireAdopted syncs s over what writeAsKIC wrote: not one create, update or delete. It returns
// the audit mark taken before the sync.
func requireAdopted(t *testing.T, e *kongemu.Emulator, g *Gateway, s *kongstate.State) int {
	t.Helper()
	mark := e.AuditMark()
	res, err := g.Apply(ctx, s)
	require.NoError(t, err)
	w := writes(e.AuditSince(mark))
	require.Zero(t, res.Creates, "changes: %+v", res.Changes)
	require.Zero(t, res.Updates, "changes: %+v", res.Changes)
	require.Zero(t, res.Deletes, "changes: %+v", res.Changes)
	require.Zero(t, w["POST"], "no entity created")
	require.Zero(t, w["DELETE"], "no entity deleted")
	return mark
}

func writeAsKIC(t *testing.T, e *kongemu.Emulator, s *kongstate.State) {
	t.Helper()
	srv, err := e.Start()
	require.NoError(t, err)
	defer func() { _ = srv.Close() }()
	put := func(method, path string, v any, extra map[string]any) {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		for k, x := range extra {
			m[k] = x
		}
		tags, _ := m["tags"].([]any)
		m["tags"] = append(tags, DefaultFilterTag)
		delete(m, "id")
		body, _ := json.Marshal(m)
		req, _ := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Less(t, resp.StatusCode, 300, "%s %s", method, path)
	}
	c := s.Content()
	for _, svc := range c.Services {
		put("PUT", "/services/"+*svc.ID, svc.Service, nil)
		for _, r := range svc.Routes {
			put("PUT", "/routes/"+*r.ID, r.Route, map[string]any{"service": map[string]any{"id": *svc.ID}})
		}
	}
	for _, u := range c.Upstreams {
		id := uuid.NewString() // decK gives upstreams random IDs
		put("PUT", "/upstreams/"+id, u.Upstream, nil)
		for _, tg := range u.Targets {
			put("POST", "/upstreams/"+id+"/targets", tg.Target, nil)
		}
	}
	for _, ca := range c.CACertificates {
		put("PUT", "/ca_certificates/"+*ca.ID, ca.CACertificate, nil)
	}
	for _, cg := range c.ConsumerGroups {
		put("PUT", "/consumer_groups/"+*cg.ID, cg.ConsumerGroup, nil)
	}
	for _, cons := range c.Consumers {
		id := *cons.ID
		if cons.Username == nil {
			id = uuid.NewString() // KIC gives a consumer with only a custom_id no ID: Kong's is random
		}
		put("PUT", "/consumers/"+id, cons.Consumer, nil)
		for _, k := range cons.KeyAuths {
			put("POST", "/consumers/"+id+"/key-auth", k, nil)
		}
		for _, k := range cons.BasicAuths {
			put("POST", "/consumers/"+id+"/basic-auth", k, nil)
		}
		for _, k := range cons.ACLGroups {
			put("POST", "/consumers/"+id+"/acls", k, nil)
		}
		for _, k := range cons.JWTAuths {
			put("POST", "/consumers/"+id+"/jwt", k, nil)
		}
		for _, k := range cons.HMACAuths {
			put("POST", "/consumers/"+id+"/hmac-auth", k, nil)
		}
		for _, k := range cons.Oauth2Creds {
			put("POST", "/consumers/"+id+"/oauth2", k, nil)
		}
		for _, grp := range cons.Groups {
			put("POST", "/consumer_groups/"+*grp.Name+"/consumers", map[string]any{"consumer": id}, nil)
		}
	}
	// Whether an object set protocols or enabled is read from the State, not its rendering.
	raw := map[string]*file.FPlugin{}
	for _, p := range s.Plugins {
		raw[*p.ID] = p
	}
	for _, p := range c.Plugins {
		extra := map[string]any{}
		if p.Consumer != nil {
			require.NotNil(t, p.Consumer.Username, "KIC names a consumer by custom_id, which Kong refuses")
			extra["consumer"] = map[string]any{"id": kongstate.ConsumerID("", *p.Consumer.Username)}
		}
		if p.Route != nil {
			extra["route"] = map[string]any{"id": kongstate.RouteID("", *p.Route.ID)}
		}
		if p.Service != nil {
			extra["service"] = map[string]any{"id": kongstate.ServiceID("", *p.Service.ID)}
		}
		if p.ConsumerGroup != nil {
			extra["consumer_group"] = map[string]any{"id": kongstate.ConsumerGroupID("", *p.ConsumerGroup.ID)}
		}
		// KIC renders a plugin against Kong's schema (translation-rules.md §11.3): enabled, and the
		// schema's protocols when the object sets none.
		if r := raw[*p.ID]; r == nil || r.Enabled == nil {
			extra["enabled"] = true
		}
		if r := raw[*p.ID]; r == nil || len(r.Protocols) == 0 {
			extra["protocols"] = schemaProtocols(t, srv.URL, *p.Name)
		}
		put("PUT", "/plugins/"+*p.ID, p.Plugin, extra)
	}
}

// schemaProtocols is the default of the protocols field of plugin name's schema on Kong.
func schemaProtocols(t *testing.T, url, name string) any {
	t.Helper()
	resp, err := http.Get(url + "/schemas/plugins/" + name)
	require.NoError(t, err)
	defer resp.Body.Close()
	var schema struct {
		Fields []map[string]struct {
			Default any `json:"default"`
		} `json:"fields"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&schema))
	for _, f := range schema.Fields {
		if p, ok := f["protocols"]; ok {
			require.NotNil(t, p.Default, "%s: protocols has a default", name)
			return p.Default
		}
	}
	t.Fatalf("%s: no protocols field", name)
	return nil
}

// A database KIC filled with consumers, credentials, a consumer group, consumer plugins and
// a CA certificate is adopted with zero creates and zero deletes (Kong Enterprise: consumer
// groups exist only there).
func TestAdoptsKICConsumersAndCACertificates(t *testing.T) {
	e := kongemu.New(kongemu.Options{Mode: kongemu.Postgres, Edition: kongemu.Enterprise})
	srv, err := e.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	g, err := New(srv.URL, &http.Client{}, Options{})
	require.NoError(t, err)

	objs, err := manifest.Load(filepath.Join("testdata", "consumers.yaml"))
	require.NoError(t, err)
	s := translate(t, append(objects(apps(2)...), objs...))
	require.Len(t, s.Consumers, 3)
	require.Len(t, s.CACertificates, 1)
	writeAsKIC(t, e, s)
	require.Len(t, e.Entities("consumers"), 3)
	requireAdopted(t, e, g, s)

	// A plugin given afterwards to the consumer with only a custom_id lands on the consumer
	// Kong holds (KIC's random ID), which stays.
	carolID := ""
	for _, c := range e.Entities("consumers") {
		if c["custom_id"] == "carol-7" {
			carolID = c["id"].(string)
		}
	}
	for _, o := range objs {
		if o.GetName() == "carol" {
			o.SetAnnotations(map[string]string{"kubernetes.io/ingress.class": "kong", "konghq.com/plugins": "limit"})
		}
	}
	res, err := g.Apply(ctx, translate(t, append(objects(apps(2)...), objs...)))
	require.NoError(t, err)
	require.Equal(t, 1, res.Creates, "changes: %+v", res.Changes)
	require.Zero(t, res.Deletes, "changes: %+v", res.Changes)
	var onCarol []string
	for _, p := range e.Entities("plugins") {
		if ref, ok := p["consumer"].(map[string]any); ok && ref["id"] == carolID {
			onCarol = append(onCarol, p["name"].(string))
		}
	}
	require.Equal(t, []string{"rate-limiting"}, onCarol)
}

func TestHandMadeEntitiesAreNeverTouched(t *testing.T) {
	e, g := newKong(t, Options{})
	srv, err := e.Start()
	require.NoError(t, err)
	defer func() { _ = srv.Close() }()
	for _, r := range []struct{ path, body string }{
		{"/services/handmade", `{"host":"hand.example.com"}`},
		{"/routes/handmade-route", `{"paths":["/hand"],"service":{"name":"handmade"}}`},
		// Same name as one of ours, but without our tag: a create of ours must not
		// replace it, and no sync may delete it.
		{"/upstreams/hand-upstream", `{"tags":["other"]}`},
	} {
		req, _ := http.NewRequest("PUT", srv.URL+r.path, bytes.NewBufferString(r.body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode)
	}
	mark := e.AuditMark()

	for _, n := range []int{3, 1, 4, 0} {
		require.NoError(t, g.Sync(ctx, target(translate(t, objects(apps(n)...)))), "n=%d", n)
		require.Len(t, e.Entities("services"), n+1)
	}
	require.NotNil(t, e.Entity("services", "handmade"))
	require.NotNil(t, e.Entity("routes", "handmade-route"))
	require.NotNil(t, e.Entity("upstreams", "hand-upstream"))
	for _, a := range e.AuditSince(mark) {
		require.NotContains(t, []string{"handmade", "handmade-route", "hand-upstream"}, a.Name, "%s %s", a.Method, a.Path)
		require.Contains(t, a.Tags, DefaultFilterTag, "%s %s writes only tagged entities", a.Method, a.Path)
	}
}

func TestFilterTagIsConfigurable(t *testing.T) {
	e, g := newKong(t, Options{FilterTags: []string{"owned-by-b", "team-b"}})
	require.NoError(t, g.Sync(ctx, target(translate(t, objects(apps(2)...)))))
	for _, ent := range e.Entities("routes") {
		require.Contains(t, ent["tags"], "owned-by-b")
		require.Contains(t, ent["tags"], "team-b", "every filter tag is written (decK's select_tags)")
		require.NotContains(t, ent["tags"], DefaultFilterTag)
	}
	// A controller with only one of the tags does not own them: it must have both.
	_, partial := newKong(t, Options{FilterTags: []string{"owned-by-b", "team-c"}})
	partial.client = g.client
	require.NoError(t, partial.Sync(ctx, target(translate(t, nil))))
	require.Len(t, e.Entities("routes"), 2)
	// A second controller with the default tag sees none of them and leaves them alone.
	_, other := newKong(t, Options{})
	other.client = g.client
	require.NoError(t, other.Sync(ctx, target(translate(t, nil))))
	require.Len(t, e.Entities("routes"), 2)
}

func TestOneIngressChangedCostsOneWrite(t *testing.T) {
	e, g := newKong(t, Options{})
	as := apps(20)
	require.NoError(t, g.Sync(ctx, target(translate(t, objects(as...)))))

	as[7].path = "/changed"
	mark := e.AuditMark()
	res, err := g.Apply(ctx, translate(t, objects(as...)))
	require.NoError(t, err)
	audit := e.AuditSince(mark)
	require.Len(t, audit, 1, "one route updated: %+v", audit)
	require.Equal(t, "PUT", audit[0].Method)
	require.Equal(t, "routes", audit[0].Entity)
	require.Equal(t, 1, res.Updates)
	require.Len(t, res.Changes, 1)
	require.Len(t, res.Changes[0].Fields, 1, "only the paths differ: %+v", res.Changes[0].Fields)
	require.Equal(t, "paths", res.Changes[0].Fields[0].Field)
	require.Equal(t, `["/"]`, res.Changes[0].Fields[0].Old)
	require.Contains(t, res.Changes[0].Fields[0].New, "/changed")
	ref, ok := kongstate.ObjectRefFromTags(res.Changes[0].Tags)
	require.True(t, ok)
	require.Equal(t, "Ingress", ref.Kind)
	require.Equal(t, "app-00007", ref.Name)
}

func TestPartialFailureIsRetriedAndConverges(t *testing.T) {
	e, g := newKong(t, Options{Concurrency: 2})
	s := translate(t, objects(apps(10)...))
	// Some route creations fail with a 503 (not retried by the syncer itself).
	e.InjectFault(kongemu.Fault{Method: "PUT", PathPrefix: "/routes/", Count: 3, Status: 503})

	res, err := g.Apply(ctx, s)
	require.Error(t, err)
	var rej *dataplane.RejectedError
	require.False(t, errors.As(err, &rej), "a 5xx is retried, not a rejection: %v", err)
	require.Positive(t, res.Failed())
	require.Less(t, len(e.Entities("routes")), 10, "the sync stopped half-way")
	require.Error(t, g.Sync(ctx, target(s)), "the fault still has hits left")

	// Faults exhausted: the next sync completes the half-applied state.
	e.ClearFaults()
	require.NoError(t, g.Sync(ctx, target(s)))
	require.Len(t, e.Entities("routes"), 10)
	require.Len(t, e.Entities("services"), 10)
	require.Len(t, e.Entities("targets"), 10)
	plan, err := g.Diff(ctx, s)
	require.NoError(t, err)
	require.Zero(t, plan.Total(), "converged: %+v", plan.Changes)
}

func TestNetworkFailureIsNotARejection(t *testing.T) {
	e, g := newKong(t, Options{})
	e.InjectFault(kongemu.Fault{Method: "PUT", Drop: true})
	err := g.Sync(ctx, target(translate(t, objects(apps(2)...))))
	require.Error(t, err)
	var rej *dataplane.RejectedError
	require.False(t, errors.As(err, &rej))
	e.ClearFaults()
	require.NoError(t, g.Sync(ctx, target(translate(t, objects(apps(2)...)))))
}

func TestRejectedEntityIsMappedToItsObject(t *testing.T) {
	e, g := newKong(t, Options{})
	s := translate(t, objects(apps(3)...))
	// The translator checks regexes; Kong's own checks are what this test is about.
	bad := s.Services[1].Routes[0]
	bad.Paths = []*string{ptr.To("~/bad(regex")}
	err := g.Sync(ctx, target(s))
	var rej *dataplane.RejectedError
	require.ErrorAs(t, err, &rej)
	require.Equal(t, g.URL(), rej.Gateway)
	require.NotEmpty(t, rej.Entities)
	ent := rej.Entities[0]
	require.Equal(t, "route", ent.EntityType)
	require.Equal(t, "Ingress", ent.Object.Kind)
	require.Equal(t, "app-00001", ent.Object.Name)
	require.Equal(t, "default", ent.Object.Namespace)
	require.NotEmpty(t, ent.Object.UID)
	require.Contains(t, ent.Field, "paths")
	require.NotEmpty(t, ent.Message)
	require.Nil(t, e.Entity("routes", *bad.ID))
}

func TestDiffChangesNothing(t *testing.T) {
	e, g := newKong(t, Options{})
	s := translate(t, objects(apps(2)...))
	mark := e.AuditMark()
	plan, err := g.Diff(ctx, s)
	require.NoError(t, err)
	require.Empty(t, e.AuditSince(mark), "a dry run writes nothing")
	require.Equal(t, 8, plan.Creates) // 2 x (service, route, upstream, target)
	var kinds []string
	for _, c := range plan.Changes {
		require.Equal(t, Create, c.Op)
		kinds = append(kinds, c.Kind)
	}
	require.True(t, slices.Contains(kinds, "route"))

	require.NoError(t, g.Sync(ctx, target(s)))
	plan, err = g.Diff(ctx, translate(t, objects(apps(1)...)))
	require.NoError(t, err)
	require.Equal(t, 4, plan.Deletes)
	require.Len(t, e.Entities("services"), 2, "still there after the dry run")
}

func TestSchemaCacheDropsOnNewNode(t *testing.T) {
	e, g := newKong(t, Options{})
	s := translate(t, objects(apps(1)...))
	require.NoError(t, g.Sync(ctx, target(s)))
	before := e.RequestCount("GET", "/schemas/")
	require.NoError(t, g.Sync(ctx, target(s)))
	require.Equal(t, before, e.RequestCount("GET", "/schemas/"), "schemas cached")
	e.Restart() // new node id
	require.NoError(t, g.Sync(ctx, target(s)))
	require.NoError(t, g.Sync(ctx, target(s)))
	require.Positive(t, e.RequestCount("GET", "/schemas/")-before, "re-read after a restart")
}

// With FullSyncEvery, a sync of the target Kong already took costs nothing, except every
// FullSyncEvery-th one, which dumps Kong and repairs a change made there by hand; a changed
// target syncs at once.
func TestUnchangedTargetSkipsTheDump(t *testing.T) {
	e, g := newKong(t, Options{FullSyncEvery: 3})
	s := translate(t, objects(apps(3)...))
	require.NoError(t, g.Sync(ctx, target(s)))

	before := e.RequestCount("", "/")
	require.NoError(t, g.Sync(ctx, target(s)))
	require.Equal(t, before, e.RequestCount("", "/"), "an unchanged target sends nothing")

	// Someone deletes a route by hand; the third unchanged sync dumps and repairs it.
	route := e.Entities("routes")[0]
	req, err := http.NewRequest(http.MethodDelete, g.url+"/routes/"+route["id"].(string), nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Len(t, e.Entities("routes"), 2)
	require.NoError(t, g.Sync(ctx, target(s)))
	require.Len(t, e.Entities("routes"), 2, "the second unchanged sync is skipped too")
	require.NoError(t, g.Sync(ctx, target(s)))
	require.Len(t, e.Entities("routes"), 3, "the third unchanged sync dumps Kong and repairs the drift")

	// A changed target is synced at once, whatever the count.
	s2 := translate(t, objects(apps(4)...))
	require.NoError(t, g.Sync(ctx, target(s2)))
	require.Len(t, e.Entities("routes"), 4)
}

// Consumers, their credentials and plugins are ours to diff now that KongConsumers are
// translated: a tagged consumer no object produces any more is deleted with its credential
// and plugin (DB mode used to keep them while konductor did not translate consumers).
func TestConsumersAreDiffed(t *testing.T) {
	e, g := newKong(t, Options{})
	srv, err := e.Start()
	require.NoError(t, err)
	defer func() { _ = srv.Close() }()
	tag := `"tags":["k8s-name:alice","k8s-kind:KongConsumer","` + DefaultFilterTag + `"]`
	for _, r := range []struct{ path, body string }{
		{"/consumers/alice", `{` + tag + `}`},
		{"/consumers/alice/key-auth", `{"key":"alice-key",` + tag + `}`},
		{"/consumers/alice/plugins", `{"name":"rate-limiting","config":{"minute":5},` + tag + `}`},
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+r.path, bytes.NewBufferString(r.body))
		req.Header.Set("Content-Type", "application/json")
		if r.path == "/consumers/alice" {
			req.Method = http.MethodPut
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Less(t, resp.StatusCode, 300, "%s", r.path)
	}
	require.NoError(t, g.Sync(ctx, target(translate(t, objects(apps(2)...)))))
	require.Nil(t, e.Entity("consumers", "alice"), "a consumer no KongConsumer produces is deleted")
	require.Empty(t, e.Entities("key-auths"))
	require.Empty(t, e.Entities("plugins"))
}

// KIC's --skip-ca-certificates: CA certificates are neither written nor deleted; those in
// Kong (another workspace's, tagged as ours) stay.
func TestSkipCACertificatesLeavesThemAlone(t *testing.T) {
	e := kongemu.New(kongemu.Options{Mode: kongemu.Postgres, Edition: kongemu.Enterprise})
	srv, err := e.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	objs, err := manifest.Load(filepath.Join("testdata", "consumers.yaml"))
	require.NoError(t, err)
	s := translate(t, append(objects(apps(1)...), objs...))
	require.Len(t, s.CACertificates, 1)

	g, err := New(srv.URL, &http.Client{}, Options{SkipCACertificates: true})
	require.NoError(t, err)
	require.NoError(t, g.Sync(ctx, target(s)))
	require.Empty(t, e.Entities("ca_certificates"), "not written")
	require.NotEmpty(t, e.Entities("consumers"), "the rest is")

	// One written by another controller, with our tag, is not deleted by a sync without it.
	ca := s.CACertificates[0]
	body, err := json.Marshal(map[string]any{"cert": *ca.Cert, "tags": []string{DefaultFilterTag}})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPut, srv.URL+"/ca_certificates/"+*ca.ID, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Less(t, resp.StatusCode, 300)
	require.Len(t, e.Entities("ca_certificates"), 1)
	none := translate(t, objects(apps(1)...))
	g, err = New(srv.URL, &http.Client{}, Options{SkipCACertificates: true})
	require.NoError(t, err)
	require.NoError(t, g.Sync(ctx, target(none)))
	require.Len(t, e.Entities("ca_certificates"), 1, "not deleted")
}
