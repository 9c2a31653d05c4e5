package dbmode

import (
	"context"
	"fmt"
	"time"

	"github.com/blang/semver/v4"
	"github.com/kong/go-database-reconciler/pkg/dump"
	"github.com/kong/go-database-reconciler/pkg/state"
	"github.com/kong/go-kong/kong"

	"github.com/konductor/konductor/internal/kongstate"
)

// Filling a Kong that holds none of the controller's services and upstreams (issue #45).
//
// The first sync against an empty Kong (a first install, a restored empty database) would
// build the target state of the whole configuration at once and diff it against a state that
// grows to the same size as the syncer records each create: at 10,000 Ingresses two go-memdb
// states of every entity, seconds of radix-tree inserts, and about a gigabyte of the
// controller's memory at the peak. When the dump shows Kong holding no service, route,
// upstream or target that carries the filter tag, the same writes are made in units
// (patch.go): first everything that is not a unit (certificates, consumers, CA certificates,
// vaults, consumer groups, global and consumer plugins) diffed whole against the dump, then
// the services and upstreams in batches of fillBatch, each with the routes, plugins and
// targets that belong to it, diffed against the nothing Kong holds of them. Each batch's
// entities, as Kong answered their writes, go into the dump's state, which ends as the known
// state a whole diff would have left (known.go). Only one batch's target is built at a time.
//
// It is the whole diff, split: Kong holds no entity of a unit, so a unit's diff is its
// creates, and nothing outside the units references a unit's entities (a service names its
// upstream by host name, and a plugin that names a unit's service or route belongs to the
// unit); the entities that are not units go first, as the whole diff creates them before
// the services and upstreams that name them (client certificates, CA certificates). Deletes
// still come only from the translation: the first step is the whole diff of everything but
// the units, and there is nothing of the units to delete.
//
// A batch whose target file.Get cannot build alone (a plugin naming a consumer as well as a
// route), or whose plugins Kong's validator refuses, ends the fill: the pass goes on with the
// whole target against the state the fill left, which is what Kong holds, so the refused
// objects are isolated as in any sync (isolate.go; the dump's entity keys are what Kong held
// before, so what the fill created for a refused object is deleted). A write that fails ends
// the pass with the syncer's errors, as a whole diff that stops at its first failure does, and
// the next pass dumps Kong (which now holds units) and diffs whole.

// defaultFillBatch is how many services and how many upstreams one batch of a fill holds: at
// 1,000 a batch's target is a few megabytes, and the batches' own steps (a file.Get, a syncer)
// cost little beside their thousands of writes.
const defaultFillBatch = 1000

// fillParts splits s for a fill: the batches of units, each with its part of s (as unitsOf),
// and the rest of s. ok is false when s has no more than one batch (the whole diff is then
// the same work in one step) or when a plugin names the service of one batch and the route of
// another.
func fillParts(s *kongstate.State, size int) (batches []units, parts []*kongstate.State, rest *kongstate.State, ok bool) {
	n := max(len(s.Services), len(s.Upstreams))
	if size < 1 || n <= size {
		return nil, nil, nil, false
	}
	count := (n + size - 1) / size
	batches, parts = make([]units, count), make([]*kongstate.State, count)
	for i := range batches {
		batches[i] = units{services: map[string]bool{}, upstreams: map[string]bool{}}
		parts[i] = &kongstate.State{LicensesKnown: s.LicensesKnown, CertificateAlts: s.CertificateAlts}
	}
	// batchOf names the batch of each unit's service and route, by ID and by name (a plugin
	// names a route by either), as unitIDs does.
	batchOf := map[string]int{}
	for i, svc := range s.Services {
		if svc == nil || svc.Name == nil {
			return nil, nil, nil, false
		}
		b := i / size
		batches[b].services[*svc.Name] = true
		parts[b].Services = append(parts[b].Services, svc)
		batchOf[kong.StringValue(svc.ID)], batchOf[*svc.Name] = b, b
		for _, r := range svc.Routes {
			if r != nil {
				batchOf[kong.StringValue(r.ID)], batchOf[kong.StringValue(r.Name)] = b, b
			}
		}
	}
	delete(batchOf, "")
	for i, up := range s.Upstreams {
		if up == nil || up.Name == nil {
			return nil, nil, nil, false
		}
		b := i / size
		batches[b].upstreams[*up.Name] = true
		parts[b].Upstreams = append(parts[b].Upstreams, up)
	}
	r := *s
	rest = &r
	rest.Services, rest.Upstreams, rest.Plugins = nil, nil, nil
	for _, p := range s.Plugins {
		if p == nil {
			continue
		}
		svc, onSvc := -1, false
		if p.Service != nil {
			svc, onSvc = batchOf[kong.StringValue(p.Service.ID)]
		}
		route, onRoute := -1, false
		if p.Route != nil {
			route, onRoute = batchOf[kong.StringValue(p.Route.ID)]
		}
		switch {
		case onSvc && onRoute && svc != route:
			return nil, nil, nil, false
		case onSvc:
			parts[svc].Plugins = append(parts[svc].Plugins, p)
		case onRoute:
			parts[route].Plugins = append(parts[route].Plugins, p)
		default:
			rest.Plugins = append(rest.Plugins, p)
		}
	}
	return batches, parts, rest, true
}

// holdsNoUnits reports whether current has no service, route, upstream or target: a Kong a
// fill may fill.
func holdsNoUnits(current *state.KongState) (bool, error) {
	for _, count := range []func() (int, error){
		func() (int, error) { all, err := current.Services.GetAll(); return len(all), err },
		func() (int, error) { all, err := current.Routes.GetAll(); return len(all), err },
		func() (int, error) { all, err := current.Upstreams.GetAll(); return len(all), err },
		func() (int, error) { all, err := current.Targets.GetAll(); return len(all), err },
	} {
		if n, err := count(); err != nil || n > 0 {
			return false, err
		}
	}
	return true, nil
}

// fillOutcome is what a fill did: res merges the changes of every step, errs are the failures
// of the step that stopped it, and done tells whether every unit was written (false: the pass
// goes on with the whole target against current, unless errs).
type fillOutcome struct {
	res  *Result
	errs []error
	done bool
}

// fill writes s into a Kong whose dump, current, holds none of its units, in batches, and
// leaves current holding what Kong holds after the writes. ok is false when s is not split
// (fillParts); nothing was written then.
func (g *Gateway) fill(ctx context.Context, s *kongstate.State, current *state.KongState,
	version semver.Version, enterprise bool, dumpConfig dump.Config,
) (out fillOutcome, ok bool, err error) {
	// Kong's emptiness first: most dumps find Kong holding units, and then s is not split.
	if empty, err := holdsNoUnits(current); err != nil || !empty {
		return fillOutcome{}, false, err
	}
	batches, parts, rest, split := fillParts(s, g.fillBatch)
	if !split {
		return fillOutcome{}, false, nil
	}
	out.res = &Result{}
	var phases Phases
	step := func(cur, target *state.KongState, built time.Time) (stop bool, err error) {
		phases.Target += time.Since(built)
		defer func(start time.Time) { phases.Solve += time.Since(start) }(time.Now())
		invalid, err := g.validateChangedPlugins(ctx, cur, target)
		if err != nil || len(invalid) > 0 {
			// The whole pass validates again and isolates the refused objects.
			return true, err
		}
		res, errs, err := g.solveParked(ctx, cur, target, enterprise, false)
		if err != nil {
			return true, err
		}
		out.res.add(res)
		out.errs = errs
		return len(errs) > 0, nil
	}
	defer func() { out.res.Phases = phases }()

	start := time.Now()
	restTarget, err := g.targetState(ctx, rest, current, version, enterprise, dumpConfig)
	if err != nil {
		// The whole target would not build either: the pass says why.
		return out, true, nil
	}
	if stop, err := step(current, restTarget, start); stop || err != nil {
		return out, true, err
	}
	for i, u := range batches {
		start := time.Now()
		held, target, err := g.unitStates(ctx, current, parts[i], u, version, enterprise, dumpConfig)
		if err != nil {
			g.opts.Logger.V(1).Info("filling Kong: a batch of services and upstreams does not build alone; diffing the whole target",
				"gateway", g.url, "error", err.Error())
			return out, true, nil
		}
		stop, err := step(held, target, start)
		if err != nil {
			return out, true, err
		}
		if len(out.errs) == 0 {
			if err := putUnitsBack(current, held, u); err != nil {
				return out, true, fmt.Errorf("recording the filled units of %s: %w", g.url, err)
			}
		}
		if stop {
			return out, true, nil
		}
	}
	out.done = true
	return out, true, nil
}
