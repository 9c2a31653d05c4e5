package dbmode

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-database-reconciler/pkg/state"
	"github.com/kong/go-kong/kong"

	"github.com/konductor/konductor/internal/kongstate"
)

// A change diffed as a patch (issue #45).
//
// Against a known state (known.go) a sync still builds the whole target (file.Get and a
// go-memdb state of every entity) and diffs it whole: at 10,000 Ingresses seconds of CPU for
// a change of one route. The translator's rounds keep the entity of every object that did
// not change (translator.Incremental: the same *file.FService, *file.FUpstream pointer), as
// the DB-less renderer relies on. So when the translation Kong last took and the new one
// differ only in services (each with its routes and the plugins nested in them) and
// upstreams (each with its targets), a sync diffs only those units: the entities of the
// changed units, taken out of the known state, against a target built from the changed
// units alone, and puts the result back into the known state. Every other list of the
// State (certificates, plugins, consumers, ...) must be the very same entities, so that
// nothing outside the units can differ; plugins of the top-level list that name a unit's
// service or route by ID join the unit on both sides, so that the diff neither misses nor
// deletes them.
//
// Anything else (another list changed, a translation made whole so that every pointer is
// new, more than half the units changed, a unit whose target file.Get cannot build alone,
// such as a plugin naming a consumer) builds the whole target against the known state as
// before. A patch writes exactly what the whole diff would: units are independent in
// Kong's model (a service names its upstream by host name, not by foreign key), and what
// the whole diff would change outside the changed units is nothing, since those entities are
// the same as in the translation Kong took.

// units are the services and upstreams (by name) that differ between two translations.
type units struct {
	services, upstreams map[string]bool
}

func (u units) size() int { return len(u.services) + len(u.upstreams) }

// changedUnits compares the State Kong took (was) with the new one: ok is false when
// something besides services and upstreams changed, or when most of them did (a patch
// would then be the whole diff, with more steps).
func changedUnits(was, now *kongstate.State) (units, bool) {
	if was == nil || now == nil || was.LicensesKnown != now.LicensesKnown ||
		!slices.Equal(was.Certificates, now.Certificates) ||
		!slices.Equal(was.Consumers, now.Consumers) || !slices.Equal(was.ConsumerGroups, now.ConsumerGroups) ||
		!slices.Equal(was.CACertificates, now.CACertificates) || !slices.Equal(was.Vaults, now.Vaults) ||
		!slices.Equal(was.Licenses, now.Licenses) || !maps.Equal(was.CertificateAlts, now.CertificateAlts) {
		return units{}, false
	}
	u := units{
		services:  changedByName(was.Services, now.Services, func(s *file.FService) *string { return s.Name }),
		upstreams: changedByName(was.Upstreams, now.Upstreams, func(u *file.FUpstream) *string { return u.Name }),
	}
	if u.services == nil || u.upstreams == nil || 2*u.size() > len(now.Services)+len(now.Upstreams) {
		return units{}, false
	}
	// The translator makes the plugins of an Ingress it translates again anew: a plugin that
	// changed is fine when it is on a unit's service or route, before or after, where the
	// patch diffs it with its unit.
	on := unitIDs(was, u)
	maps.Copy(on, unitIDs(now, u))
	for _, p := range changedPlugins(was.Plugins, now.Plugins) {
		if p.ID == nil || !(p.Service != nil && on[kong.StringValue(p.Service.ID)] || p.Route != nil && on[kong.StringValue(p.Route.ID)]) {
			return units{}, false
		}
	}
	return u, true
}

// changedPlugins are the plugins of was and of now that are not the same pointer in the
// other, by ID (a plugin without one is returned as changed); lists of one length place by
// place, as changedByName.
func changedPlugins(was, now []*file.FPlugin) []*file.FPlugin {
	if len(was) == len(now) {
		var out []*file.FPlugin
		for i := range now {
			if was[i] != now[i] {
				out = append(out, was[i], now[i])
			}
		}
		return slices.DeleteFunc(out, func(p *file.FPlugin) bool { return p == nil })
	}
	before := make(map[string]*file.FPlugin, len(was))
	var out []*file.FPlugin
	for _, p := range was {
		if p == nil {
			continue
		}
		if p.ID == nil {
			out = append(out, p)
			continue
		}
		before[*p.ID] = p
	}
	for _, p := range now {
		if p == nil {
			continue
		}
		if p.ID == nil {
			out = append(out, p)
			continue
		}
		if old, ok := before[*p.ID]; ok {
			delete(before, *p.ID)
			if old == p {
				continue
			}
			out = append(out, old)
		}
		out = append(out, p)
	}
	for _, p := range before {
		out = append(out, p)
	}
	return out
}

// changedByName lists the names of the entities that are not the same pointer in was and
// now, including those in one only; nil when an entity has no name (it cannot be a unit).
// Lists of one length are compared place by place (the State's order is stable): an entity
// that only moved is then listed too, which costs its unit an empty diff, not a wrong one.
func changedByName[E any](was, now []*E, name func(*E) *string) map[string]bool {
	if len(was) == len(now) {
		out := map[string]bool{}
		for i := range now {
			if was[i] == now[i] {
				continue
			}
			for _, e := range []*E{was[i], now[i]} {
				if e == nil {
					continue
				}
				n := name(e)
				if n == nil {
					return nil
				}
				out[*n] = true
			}
		}
		return out
	}
	before := make(map[string]*E, len(was))
	for _, e := range was {
		if e == nil {
			continue
		}
		n := name(e)
		if n == nil {
			return nil
		}
		before[*n] = e
	}
	out := map[string]bool{}
	for _, e := range now {
		if e == nil {
			continue
		}
		n := name(e)
		if n == nil {
			return nil
		}
		if before[*n] != e {
			out[*n] = true
		}
		delete(before, *n)
	}
	for n := range before {
		out[n] = true
	}
	return out
}

// unitsOf is the part of s that is the units: their services and upstreams, and the plugins
// of the top-level list that name one of those services or their routes.
func unitsOf(s *kongstate.State, u units) *kongstate.State {
	out := &kongstate.State{LicensesKnown: s.LicensesKnown, CertificateAlts: s.CertificateAlts}
	for _, svc := range s.Services {
		if svc != nil && svc.Name != nil && u.services[*svc.Name] {
			out.Services = append(out.Services, svc)
		}
	}
	ids := unitIDs(s, u)
	for _, up := range s.Upstreams {
		if up != nil && up.Name != nil && u.upstreams[*up.Name] {
			out.Upstreams = append(out.Upstreams, up)
		}
	}
	for _, p := range s.Plugins {
		if p != nil && (p.Service != nil && ids[kong.StringValue(p.Service.ID)] || p.Route != nil && ids[kong.StringValue(p.Route.ID)]) {
			out.Plugins = append(out.Plugins, p)
		}
	}
	return out
}

// unitIDs are the IDs and names of the units' services and routes in s: a plugin names them
// by either (the translator, as KIC, a route by its name, which decK's file resolves).
func unitIDs(s *kongstate.State, u units) map[string]bool {
	ids := map[string]bool{}
	for _, svc := range s.Services {
		if svc == nil || svc.Name == nil || !u.services[*svc.Name] {
			continue
		}
		ids[kong.StringValue(svc.ID)], ids[*svc.Name] = true, true
		for _, r := range svc.Routes {
			if r != nil {
				ids[kong.StringValue(r.ID)], ids[kong.StringValue(r.Name)] = true, true
			}
		}
	}
	delete(ids, "")
	return ids
}

// unitEntities copies the entities of the units out of current into a state of their own:
// each service with its routes and the plugins on either, each upstream with its targets.
func unitEntities(current *state.KongState, u units) (*state.KongState, error) {
	out, err := state.NewKongState()
	if err != nil {
		return nil, err
	}
	err = eachUnitEntity(current, u, unitVisitor{
		service:  func(s *state.Service) error { return out.Services.Add(*s) },
		route:    func(r *state.Route) error { return out.Routes.Add(*r) },
		plugin:   func(p *state.Plugin) error { return addOnce(out.Plugins, p) },
		upstream: func(up *state.Upstream) error { return out.Upstreams.Add(*up) },
		target:   func(t *state.Target) error { return out.Targets.Add(*t) },
	})
	return out, err
}

// putUnitsBack replaces the units' entities in current with those of part, the state the
// syncer left after writing them (each write recorded from Kong's answer).
func putUnitsBack(current, part *state.KongState, u units) error {
	err := eachUnitEntity(current, u, unitVisitor{
		service:  func(s *state.Service) error { return current.Services.Delete(*s.ID) },
		route:    func(r *state.Route) error { return current.Routes.Delete(*r.ID) },
		plugin:   func(p *state.Plugin) error { return ignoreNotFound(current.Plugins.Delete(*p.ID)) },
		upstream: func(up *state.Upstream) error { return current.Upstreams.Delete(*up.ID) },
		target:   func(t *state.Target) error { return current.Targets.Delete(*t.Upstream.ID, *t.ID) },
	})
	if err != nil {
		return err
	}
	return eachUnitEntity(part, u, unitVisitor{
		service:  func(s *state.Service) error { return current.Services.Add(*s) },
		route:    func(r *state.Route) error { return current.Routes.Add(*r) },
		plugin:   func(p *state.Plugin) error { return addOnce(current.Plugins, p) },
		upstream: func(up *state.Upstream) error { return current.Upstreams.Add(*up) },
		target:   func(t *state.Target) error { return current.Targets.Add(*t) },
	})
}

// unitVisitor is what eachUnitEntity does with each kind of entity.
type unitVisitor struct {
	service  func(*state.Service) error
	route    func(*state.Route) error
	plugin   func(*state.Plugin) error
	upstream func(*state.Upstream) error
	target   func(*state.Target) error
}

// eachUnitEntity visits the entities of the units that s holds, children first: the plugins
// and routes of each service before it, the targets of each upstream before it. A plugin on
// both a service and a route of a unit is visited twice.
func eachUnitEntity(s *state.KongState, u units, v unitVisitor) error {
	for name := range u.services {
		svc, err := s.Services.Get(name)
		if errors.Is(err, state.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("service %s: %w", name, err)
		}
		routes, err := s.Routes.GetAllByServiceID(*svc.ID)
		if err != nil {
			return fmt.Errorf("routes of service %s: %w", name, err)
		}
		for _, r := range routes {
			if err := eachPlugin(s.Plugins.GetAllByRouteID(*r.ID))(v.plugin); err != nil {
				return fmt.Errorf("plugins of route %s: %w", kong.StringValue(r.Name), err)
			}
			if err := v.route(r); err != nil {
				return fmt.Errorf("route %s: %w", kong.StringValue(r.Name), err)
			}
		}
		if err := eachPlugin(s.Plugins.GetAllByServiceID(*svc.ID))(v.plugin); err != nil {
			return fmt.Errorf("plugins of service %s: %w", name, err)
		}
		if err := v.service(svc); err != nil {
			return fmt.Errorf("service %s: %w", name, err)
		}
	}
	for name := range u.upstreams {
		up, err := s.Upstreams.Get(name)
		if errors.Is(err, state.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("upstream %s: %w", name, err)
		}
		targets, err := s.Targets.GetAllByUpstreamID(*up.ID)
		if err != nil {
			return fmt.Errorf("targets of upstream %s: %w", name, err)
		}
		for _, t := range targets {
			if err := v.target(t); err != nil {
				return fmt.Errorf("target %s: %w", kong.StringValue(t.Target.Target), err)
			}
		}
		if err := v.upstream(up); err != nil {
			return fmt.Errorf("upstream %s: %w", name, err)
		}
	}
	return nil
}

// eachPlugin applies a visitor to a list of plugins, or returns the list's error.
func eachPlugin(plugins []*state.Plugin, err error) func(func(*state.Plugin) error) error {
	return func(visit func(*state.Plugin) error) error {
		if err != nil {
			return err
		}
		for _, p := range plugins {
			if err := visit(p); err != nil {
				return err
			}
		}
		return nil
	}
}

// addOnce adds p unless the collection has it (a plugin on a unit's service and route).
func addOnce(c *state.PluginsCollection, p *state.Plugin) error {
	if _, err := c.Get(*p.ID); err == nil {
		return nil
	} else if !errors.Is(err, state.ErrNotFound) {
		return err
	}
	return c.Add(*p)
}

func ignoreNotFound(err error) error {
	if errors.Is(err, state.ErrNotFound) {
		return nil
	}
	return err
}
