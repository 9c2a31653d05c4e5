package dbmode

import (
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/objgraph"
)

// badPath makes Kong (and the emulator) refuse a route: the translator checks regexes, so
// the State is edited after translation to stand for what the translator cannot foresee.
func badPath(r *kongstate.State, app int) {
	r.Services[app].Routes[0].Paths = []*string{ptr.To("~/bad(regex")}
}

func strs(ps []*string) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, kong.StringValue(p))
	}
	return out
}

// appIndex finds the service of the app named name: the translator orders Services by
// name, not by app index.
func appIndex(t *testing.T, s *kongstate.State, name string) int {
	t.Helper()
	for i, svc := range s.Services {
		if ref, ok := kongstate.ObjectRefFromTags(strs(svc.Routes[0].Tags)); ok && ref.Name == name {
			return i
		}
	}
	t.Fatalf("no service for %s", name)
	return -1
}

// dumps counts the syncs passes made: each pass dumps, listing the upstreams once.
func dumps(e *kongemu.Emulator) int { return e.Requests()["GET /upstreams"] }

func refusedNames(rej *dataplane.RejectedError) map[string]bool {
	out := map[string]bool{}
	for _, e := range rej.Entities {
		out[e.Object.Name] = true
	}
	return out
}

func routePaths(t *testing.T, ent map[string]any) []any {
	t.Helper()
	require.NotNil(t, ent)
	p, _ := ent["paths"].([]any)
	return p
}

// (1) One refused Ingress among many: every other Ingress is created or updated in the same
// Sync, and the refusal names that Ingress with Kong's message.
func TestOneRefusedIngressDoesNotBlockTheOthers(t *testing.T) {
	e, g := newKong(t, Options{Concurrency: 1})
	as := apps(10)
	require.NoError(t, g.Sync(ctx, target(translate(t, objects(as...)))))

	// Every existing Ingress changes its path, five new ones arrive, and one is refused.
	as = append(as, apps(15)[10:]...)
	for i := range as {
		as[i].path = "/v2"
	}
	s := translate(t, objects(as...))
	bad := appIndex(t, s, "app-00000") // first in the syncer's order: without isolation, nothing else goes through
	badPath(s, bad)

	err := g.Sync(ctx, target(s))
	var rej *dataplane.RejectedError
	require.ErrorAs(t, err, &rej, "%v", err)
	require.Equal(t, map[string]bool{"app-00000": true}, refusedNames(rej))
	require.True(t, rej.RestApplied, "everything else was applied: the sync counts as done")
	require.Equal(t, "route", rej.Entities[0].EntityType)
	require.Equal(t, "Ingress", rej.Entities[0].Object.Kind)
	require.Contains(t, rej.Entities[0].Field, "paths")
	require.NotEmpty(t, rej.Entities[0].Message)
	require.Contains(t, rej.Message, rej.Entities[0].Message, "Kong's message")

	require.Len(t, e.Entities("routes"), 15)
	require.Len(t, e.Entities("services"), 15)
	require.Len(t, e.Entities("targets"), 15)
	for _, svc := range s.Services {
		r := svc.Routes[0]
		ent := e.Entity("routes", *r.ID)
		if ref, _ := kongstate.ObjectRefFromTags(strs(r.Tags)); ref.Name == "app-00000" {
			require.Equal(t, []any{"/"}, routePaths(t, ent), "the refused Ingress keeps its earlier route")
			continue
		}
		require.Contains(t, fmt.Sprint(routePaths(t, ent)), "/v2", "route %s updated or created", *r.Name)
	}

	// The next sync of the same configuration changes nothing but refuses the same Ingress
	// again, and once it is fixed, it converges.
	err = g.Sync(ctx, target(s))
	require.ErrorAs(t, err, &rej)
	require.Equal(t, map[string]bool{"app-00000": true}, refusedNames(rej))
	fixed := translate(t, objects(as...))
	require.NoError(t, g.Sync(ctx, target(fixed)))
	plan, err := g.Diff(ctx, fixed)
	require.NoError(t, err)
	require.Zero(t, plan.Total(), "converged: %+v", plan.Changes)
}

// (2) An Ingress that synced fine and is now changed into something Kong refuses keeps its
// earlier entities in Kong, even when the change would replace them (new route name and ID:
// a create of the new route and a delete of the old one), while other changes go through.
func TestRefusedIngressKeepsItsLastGoodEntities(t *testing.T) {
	e, g := newKong(t, Options{Concurrency: 1})
	as := apps(6)
	require.NoError(t, g.Sync(ctx, target(translate(t, objects(as...)))))
	old := translate(t, objects(as...))
	oldRoute := old.Services[appIndex(t, old, "app-00002")].Routes[0]

	as[4].path = "/changed"
	s := translate(t, objects(as...)[3:]) // app-00000 deleted (its Ingress, Service, EndpointSlice)
	bad := s.Services[appIndex(t, s, "app-00002")].Routes[0]
	bad.Name = ptr.To("default.app-00002.renamed")
	bad.ID = ptr.To(uuid.NewString())
	bad.Paths = []*string{ptr.To("~/bad(regex")}

	err := g.Sync(ctx, target(s))
	var rej *dataplane.RejectedError
	require.ErrorAs(t, err, &rej, "%v", err)
	require.Equal(t, map[string]bool{"app-00002": true}, refusedNames(rej))

	require.Equal(t, []any{"/"}, routePaths(t, e.Entity("routes", *oldRoute.ID)), "last good route kept, not deleted")
	require.Nil(t, e.Entity("routes", *bad.ID), "the refused route is not there")
	require.Contains(t, routePaths(t, e.Entity("routes", *s.Services[appIndex(t, s, "app-00004")].Routes[0].ID)), "/changed/")
	require.Nil(t, e.Entity("routes", *old.Services[appIndex(t, old, "app-00000")].Routes[0].ID), "deleted Ingress removed")
	require.Len(t, e.Entities("routes"), 5)
	require.Len(t, e.Entities("services"), 5)
}

// (3) A refused entity whose tags name no object cannot be isolated: the rejection is
// returned as it is, after one pass.
func TestRefusedEntityWithoutObjectIsRejectedOnce(t *testing.T) {
	e, g := newKong(t, Options{Concurrency: 1})
	s := translate(t, objects(apps(4)...))
	bad := s.Services[0].Routes[0]
	bad.Paths = []*string{ptr.To("~/bad(regex")}
	bad.Tags = nil

	before := dumps(e)
	err := g.Sync(ctx, target(s))
	var rej *dataplane.RejectedError
	require.ErrorAs(t, err, &rej, "%v", err)
	require.NotEmpty(t, rej.Entities)
	require.Equal(t, kongstate.ObjectRef{}, rej.Entities[0].Object)
	require.False(t, rej.RestApplied, "nothing could be isolated: the rest is not known applied")
	require.Contains(t, rej.Entities[0].Field, "paths")
	require.Equal(t, 1, dumps(e)-before, "no second pass: %v", err)
	require.Nil(t, e.Entity("routes", *bad.ID))
}

// (4) Several refused objects: each pass isolates at least one more, every refused object is
// named, everything else is applied; and with more refused objects than passes, Sync still
// returns, naming those it found.
func TestSeveralRefusedObjectsTerminate(t *testing.T) {
	t.Run("within the bound", func(t *testing.T) {
		e, g := newKong(t, Options{Concurrency: 1})
		s := translate(t, objects(apps(12)...))
		for _, name := range []string{"app-00001", "app-00005", "app-00009"} {
			badPath(s, appIndex(t, s, name))
		}
		err := g.Sync(ctx, target(s))
		var rej *dataplane.RejectedError
		require.ErrorAs(t, err, &rej, "%v", err)
		require.Equal(t, map[string]bool{"app-00001": true, "app-00005": true, "app-00009": true}, refusedNames(rej))
		require.Len(t, e.Entities("routes"), 9)
		require.Len(t, e.Entities("services"), 12, "the Services of refused Ingresses are not refused")
	})
	t.Run("beyond the bound", func(t *testing.T) {
		e, g := newKong(t, Options{Concurrency: 1})
		s := translate(t, objects(apps(12)...))
		for i := range s.Services {
			badPath(s, i)
		}
		before := dumps(e)
		err := g.Sync(ctx, target(s))
		var rej *dataplane.RejectedError
		require.ErrorAs(t, err, &rej, "%v", err)
		require.Len(t, refusedNames(rej), maxPasses, "one more object per pass")
		require.False(t, rej.RestApplied, "the bound stopped it before a clean pass")
		require.Equal(t, maxPasses, dumps(e)-before, "passes")
		require.Empty(t, e.Entities("routes"))
	})
}

// A refused Kong service takes along the routes that cannot exist without it, reported on
// their Ingresses; when Kong still holds the service's last good version, the routes of
// other Ingresses go on being synced against it.
func TestRefusedServiceDependents(t *testing.T) {
	refuseService := func(s *kongstate.State, i int) {
		s.Services[i].Protocol = ptr.To("grpc")
		s.Services[i].Path = ptr.To("/x") // "path: value must be null" for grpc
	}
	t.Run("never accepted", func(t *testing.T) {
		e, g := newKong(t, Options{Concurrency: 1})
		s := translate(t, objects(apps(4)...))
		i := appIndex(t, s, "app-00002")
		refuseService(s, i)
		err := g.Sync(ctx, target(s))
		var rej *dataplane.RejectedError
		require.ErrorAs(t, err, &rej, "%v", err)
		require.Len(t, rej.Entities, 2, "%+v", rej.Entities)
		require.Equal(t, "Service", rej.Entities[0].Object.Kind)
		require.Equal(t, "service", rej.Entities[0].EntityType)
		require.Equal(t, "Ingress", rej.Entities[1].Object.Kind)
		require.Equal(t, "app-00002", rej.Entities[1].Object.Name)
		require.Contains(t, rej.Entities[1].Message, "was refused")
		require.Len(t, e.Entities("services"), 3)
		require.Len(t, e.Entities("routes"), 3)
		require.Nil(t, e.Entity("routes", *s.Services[i].Routes[0].ID))
	})
	t.Run("last good kept", func(t *testing.T) {
		e, g := newKong(t, Options{Concurrency: 1})
		as := apps(4)
		require.NoError(t, g.Sync(ctx, target(translate(t, objects(as...)))))
		for i := range as {
			as[i].path = "/v2"
		}
		s := translate(t, objects(as...))
		i := appIndex(t, s, "app-00002")
		refuseService(s, i)
		err := g.Sync(ctx, target(s))
		var rej *dataplane.RejectedError
		require.ErrorAs(t, err, &rej, "%v", err)
		require.Len(t, rej.Entities, 1, "%+v", rej.Entities)
		require.Equal(t, "Service", rej.Entities[0].Object.Kind)
		svc := e.Entity("services", *s.Services[i].ID)
		require.NotNil(t, svc)
		require.Equal(t, "http", svc["protocol"], "last good service kept")
		for _, svc := range s.Services {
			require.Contains(t, routePaths(t, e.Entity("routes", *svc.Routes[0].ID)), "/v2/", "every route updated")
		}
	})
}

// An object refused takes with it what refers to it (an Ingress to its refused Service), not
// what only shares a value with it (another Ingress that asked for a route name it holds):
// that one is translated and sent as it would be without the refused one.
func TestRefuseDoesNotCrossSharedValues(t *testing.T) {
	svc := kongstate.ObjectRef{Kind: "Service", Namespace: "ns", Name: "s"}
	ing := func(name string) kongstate.ObjectRef {
		return kongstate.ObjectRef{Group: "networking.k8s.io", Kind: "Ingress", Namespace: "ns", Name: name}
	}
	g := objgraph.New()
	g.Refer(ing("a"), svc)
	for _, i := range []kongstate.ObjectRef{ing("a"), ing("b")} {
		g.Refer(i, objgraph.SharedValue("route x"))
		g.Refer(objgraph.SharedValue("route x"), i)
	}
	refused := map[kongstate.ObjectRef]bool{}
	require.True(t, refuse(refused, g, svc))
	require.Equal(t, map[kongstate.ObjectRef]bool{objgraph.Key(svc): true, objgraph.Key(ing("a")): true}, refused)
}
