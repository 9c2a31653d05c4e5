package dbmode

import (
	"context"
	"errors"
	"fmt"

	"github.com/kong/go-database-reconciler/pkg/state"
	"github.com/kong/go-kong/kong"

	"github.com/konductor/konductor/internal/kongstate"
)

// No window in database mode (issue #44, item 9). go-database-reconciler writes parents
// before children: a new route before the plugins attached to it (or to its service), so for
// the milliseconds between the two a route that asks for key-auth is served without it. A
// sync that creates such a route therefore creates it attached to a disabled service, which
// Kong serves as if the route did not exist (its router skips the routes of a service whose
// enabled is false), lets the syncer create the plugins, and only then points the route at
// its own service and deletes the parking service. A sync that fails half-way leaves the
// route parked, unreachable, until the next sync, which points it at its service from the
// target as any other update.
//
// Only routes of HTTP protocols are parked (a stream route on an HTTP service is not what
// the parking service is for); plugins attached to a consumer alone, or global plugins, do
// not make a route guarded.

// parkingServiceName is the parking service's name: "~" is a character Kong allows in a
// name and the translator never writes (Kubernetes names have none), so it is never an
// object's service.
const parkingServiceName = "konductor~parking"

// parked is what parkGuardedRoutes changed in the target: the routes moved to the parking
// service, with their own services' IDs.
type parked struct {
	service *state.Service
	routes  map[string]string // route ID -> its service's ID
}

// parkGuardedRoutes moves to a disabled parking service each route of target that current
// does not hold and that has a plugin of its own or of its service in target, and adds the
// parking service to target (nil when there is none: nothing changed).
func parkGuardedRoutes(current, target *state.KongState, workspace string, tags []string) (*parked, error) {
	plugins, err := target.Plugins.GetAll()
	if err != nil {
		return nil, err
	}
	guardedRoutes, guardedServices := map[string]bool{}, map[string]bool{}
	for _, p := range plugins {
		if p.Route != nil && p.Route.ID != nil {
			guardedRoutes[*p.Route.ID] = true
		}
		if p.Service != nil && p.Service.ID != nil {
			guardedServices[*p.Service.ID] = true
		}
	}
	if len(guardedRoutes)+len(guardedServices) == 0 {
		return nil, nil
	}
	routes, err := target.Routes.GetAll()
	if err != nil {
		return nil, err
	}
	var p *parked
	for _, r := range routes {
		if r.ID == nil || r.Service == nil || r.Service.ID == nil || !httpOnly(r.Protocols) ||
			!guardedRoutes[*r.ID] && !guardedServices[*r.Service.ID] {
			continue
		}
		// A route Kong holds is served already, but one a failed sync left parked is not.
		if held, err := current.Routes.Get(*r.ID); err == nil {
			if held.Service == nil || kong.StringValue(held.Service.ID) != kongstate.ServiceID(workspace, parkingServiceName) {
				continue
			}
		} else if !errors.Is(err, state.ErrNotFound) {
			return nil, err
		}
		if p == nil {
			p = &parked{routes: map[string]string{}, service: &state.Service{Service: kong.Service{
				ID: kong.String(kongstate.ServiceID(workspace, parkingServiceName)), Name: kong.String(parkingServiceName),
				Host: kong.String("parking.invalid"), Protocol: kong.String("http"), Port: kong.Int(80),
				Enabled: kong.Bool(false), Tags: kong.StringSlice(tags...),
			}}}
			if err := target.Services.Add(*p.service); err != nil && !errors.Is(err, state.ErrAlreadyExists) {
				return nil, fmt.Errorf("adding the parking service: %w", err)
			}
		}
		p.routes[*r.ID] = *r.Service.ID
		moved := *r
		moved.Service = &kong.Service{ID: p.service.ID}
		if err := target.Routes.Update(moved); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// httpOnly: protocols (none: Kong's default, http and https) are all of HTTP.
func httpOnly(protocols []*string) bool {
	for _, pr := range protocols {
		switch kong.StringValue(pr) {
		case "http", "https", "grpc", "grpcs":
		default:
			return false
		}
	}
	return true
}

// restore puts target back as it was before parkGuardedRoutes.
func (p *parked) restore(target *state.KongState) error {
	for id, svc := range p.routes {
		r, err := target.Routes.Get(id)
		if err != nil {
			return err
		}
		restored := *r
		restored.Service = &kong.Service{ID: kong.String(svc)}
		if err := target.Routes.Update(restored); err != nil {
			return err
		}
	}
	return target.Services.Delete(*p.service.ID)
}

// unpark points each parked route at its own service on Kong, then deletes the parking
// service: the syncer wrote the parked target, plugins included. A route it could not
// point stays parked (not served) and the next sync updates it. current, the syncer's
// current state, takes Kong's answers, so that it stays what Kong holds (known.go).
func (p *parked) unpark(ctx context.Context, client *kong.Client, current *state.KongState) error {
	for id, svc := range p.routes {
		r, err := client.Routes.Update(ctx, &kong.Route{ID: kong.String(id), Service: &kong.Service{ID: kong.String(svc)}})
		if err != nil {
			return fmt.Errorf("pointing route %s at its service: %w", id, err)
		}
		if err := current.Routes.Update(state.Route{Route: *r}); err != nil {
			return fmt.Errorf("recording route %s at its service: %w", id, err)
		}
	}
	if err := client.Services.Delete(ctx, p.service.ID); err != nil {
		return fmt.Errorf("deleting the parking service: %w", err)
	}
	if err := current.Services.Delete(*p.service.ID); err != nil && !errors.Is(err, state.ErrNotFound) {
		return fmt.Errorf("recording the parking service deleted: %w", err)
	}
	return nil
}

// withoutParking takes the parking service's changes out of res: the route it held was
// created, nothing else.
func (p *parked) withoutParking(res *Result) {
	kept := res.Changes[:0]
	for _, c := range res.Changes {
		if c.Kind == "service" && c.Name == parkingServiceName {
			if c.Op == Create && c.Err == nil {
				res.Creates--
			}
			continue
		}
		kept = append(kept, c)
	}
	res.Changes = kept
}
