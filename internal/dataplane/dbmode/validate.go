package dbmode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"

	"github.com/kong/go-database-reconciler/pkg/state"
	"github.com/kong/go-kong/kong"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongstate"
)

// Validating plugins before anything is written.
//
// go-database-reconciler writes parents before children: the route of a new Ingress is
// created before the plugins attached to it. If Kong then refuses one of those plugins, the
// route exists without it until isolation takes it out again, and for an authentication
// plugin (key-auth, jwt, acl, ...) that is a route open to anyone. Isolation after the fact
// cannot undo what a proxy served in between, so every plugin the sync would create or change
// is first checked with Kong's own validator (POST /schemas/plugins/validate: schema and
// entity checks, the same Kong runs on a write, without writing), and the objects of the
// plugins it refuses, with every object that depends on them, are left out from the first
// request on. Translation already checks the plugins whose schema konductor knows
// (internal/kongrules); this covers the others, and any schema difference with the Kong
// version actually running.
//
// A plugin whose tags name no object cannot be left out: it is not checked here, and its
// write fails as before. A Kong without the validate endpoint (404, 405) is not asked again.

// validateChangedPlugins asks Kong to validate every plugin of target that current does not
// hold as it is, and returns Kong's refusals of plugins that belong to an object.
func (g *Gateway) validateChangedPlugins(ctx context.Context, current, target *state.KongState) ([]dataplane.EntityError, error) {
	if g.noValidateEndpoint.Load() {
		return nil, nil
	}
	want, err := target.Plugins.GetAll()
	if err != nil {
		return nil, err
	}
	have, err := current.Plugins.GetAll()
	if err != nil {
		return nil, err
	}
	held := make(map[string]*state.Plugin, len(have))
	for _, p := range have {
		held[kong.StringValue(p.ID)] = p
	}
	var check []*state.Plugin
	for _, p := range want {
		if _, ok := objectOfPlugin(p); !ok {
			continue
		}
		if cur := held[kong.StringValue(p.ID)]; cur != nil && samePlugin(cur, p) {
			continue
		}
		check = append(check, p)
	}
	if len(check) == 0 {
		return nil, nil
	}

	var (
		mu       sync.Mutex
		refusals []dataplane.EntityError
		failure  error
		wg       sync.WaitGroup
	)
	sem := make(chan struct{}, g.opts.Concurrency)
	for _, p := range check {
		wg.Add(1)
		sem <- struct{}{}
		go func(p *state.Plugin) {
			defer wg.Done()
			defer func() { <-sem }()
			ok, msg, err := g.client.Plugins.Validate(ctx, &p.Plugin)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				failure = errors.Join(failure, err)
			case !ok:
				ref, _ := objectOfPlugin(p)
				refusals = append(refusals, dataplane.EntityError{
					Object: ref, EntityType: "plugin", EntityName: kong.StringValue(p.Name), Message: msg,
				})
			}
		}(p)
	}
	wg.Wait()
	if failure != nil {
		var apiErr *kong.APIError
		if errors.As(failure, &apiErr) && (apiErr.Code() == http.StatusNotFound || apiErr.Code() == http.StatusMethodNotAllowed) {
			g.noValidateEndpoint.Store(true)
			g.opts.Logger.Info("Kong has no plugin validation endpoint; plugins are checked by their writes only", "gateway", g.url)
			return nil, nil
		}
		return nil, fmt.Errorf("validating plugins on %s: %w", g.url, failure)
	}
	sort.Slice(refusals, func(i, j int) bool { return refusals[i].Object.String() < refusals[j].Object.String() })
	return refusals, nil
}

func objectOfPlugin(p *state.Plugin) (kongstate.ObjectRef, bool) {
	return kongstate.ObjectRefFromTags(tagStrings(p.Tags))
}

// samePlugin reports whether Kong holds want as it is. It compares more strictly than the
// syncer (arrays in order, tags in order): a false difference costs one validation more,
// never one less.
func samePlugin(have, want *state.Plugin) bool {
	norm := func(p *state.Plugin) []byte {
		c := p.Plugin.DeepCopy()
		c.CreatedAt = nil
		if c.Service != nil {
			c.Service = &kong.Service{ID: c.Service.ID}
		}
		if c.Route != nil {
			c.Route = &kong.Route{ID: c.Route.ID}
		}
		if c.Consumer != nil {
			c.Consumer = &kong.Consumer{ID: c.Consumer.ID}
		}
		if c.ConsumerGroup != nil {
			c.ConsumerGroup = &kong.ConsumerGroup{ID: c.ConsumerGroup.ID}
		}
		b, _ := json.Marshal(c)
		return b
	}
	return string(norm(have)) == string(norm(want))
}
