package kongstate

import (
	"slices"

	"github.com/kong/go-database-reconciler/pkg/file"
)

// This file says which fields of a DB-less body may be left out because Kong fills them with
// the value they hold: the body is smaller (issue #45: at 30,000 Ingresses a default Kong's
// 10m Admin API limit is reached at about 9,100), and the configuration Kong holds is the same.
//
// Kong's declarative loader (kong/db/schema/others/declarative_config.lua, flatten) runs
// process_auto_fields(input, "insert") over the whole document, which fills every field left
// out with its schema default, and it validates each entity record after the same filling
// (kong/db/schema/init.lua, validate_field of a record: process_auto_fields then validate), so
// that its entity checks see the filled value. A field sent with its default and a field left
// out are one stored value. The defaults are those of kong/db/schema/entities/services.lua,
// routes.lua, upstreams.lua, targets.lua and plugins.lua, the same in every Kong 3.x.
//
// Only fields that every router flavor and Kong 3.x version has are left out: a route with an
// expression keeps the traditional fields it holds (path_handling, regex_priority), which Kong
// before 3.7 does not have under the expressions router, so that what such a Kong refuses is
// still refused. Fields whose default depends on something else (a plugin's protocols: its
// schema's) are kept. Consumers, certificates and the other entities are sent as they are.
//
// Only the DB-less body is reduced (Renderer.QuotedDeclarativeConfig, State.DBLessConfig):
// DeclarativeConfig, which the goldens, database mode's diff and `konductor translate` read,
// keeps KIC's rendering.

// Kong's defaults of the fields left out.
const (
	kongServiceProtocol  = "http"
	kongServicePort      = 80
	kongServiceRetries   = 5
	kongServiceTimeout   = 60000 // connect_timeout, write_timeout, read_timeout
	kongRouteRedirect    = 426   // https_redirect_status_code
	kongRoutePathHandle  = "v0"
	kongUpstreamAlgo     = "round-robin"
	kongUpstreamSlots    = 10000
	kongUpstreamHashOn   = "none" // hash_on, hash_fallback
	kongUpstreamCookie   = "/"    // hash_on_cookie_path
	kongTargetWeight     = 100
	kongEnabled          = true // services, routes' plugins, plugins
	kongStripPath        = true
	kongPreserveHost     = false
	kongRequestBuffering = true // request_buffering, response_buffering
)

// kongRouteProtocols is a route's default protocols.
var kongRouteProtocols = []string{"http", "https"}

// unlessDefault is p, or nil when it points to def.
func unlessDefault[T comparable](p *T, def T) *T {
	if p != nil && *p == def {
		return nil
	}
	return p
}

// withoutServiceDefaults is svc with the fields Kong fills with the same value left out: a
// copy, with copies of its routes and plugins; what they point to is svc's.
func withoutServiceDefaults(svc *file.FService) *file.FService {
	cp := *svc
	cp.Protocol = unlessDefault(cp.Protocol, kongServiceProtocol)
	cp.Port = unlessDefault(cp.Port, kongServicePort)
	cp.Retries = unlessDefault(cp.Retries, kongServiceRetries)
	cp.ConnectTimeout = unlessDefault(cp.ConnectTimeout, kongServiceTimeout)
	cp.WriteTimeout = unlessDefault(cp.WriteTimeout, kongServiceTimeout)
	cp.ReadTimeout = unlessDefault(cp.ReadTimeout, kongServiceTimeout)
	cp.Enabled = unlessDefault(cp.Enabled, kongEnabled)
	if svc.Routes != nil {
		cp.Routes = make([]*file.FRoute, len(svc.Routes))
		for i, r := range svc.Routes {
			cp.Routes[i] = withoutRouteDefaults(r)
		}
	}
	cp.Plugins = withoutPluginsDefaults(svc.Plugins)
	return &cp
}

// withoutRouteDefaults is r with the fields Kong fills with the same value left out (a copy,
// with copies of its plugins). r's defaults as the rendering fills them (fillRouteDefaults)
// count as set.
func withoutRouteDefaults(r *file.FRoute) *file.FRoute {
	cp := *r
	cp.HTTPSRedirectStatusCode = unlessDefault(cp.HTTPSRedirectStatusCode, kongRouteRedirect)
	cp.StripPath = unlessDefault(cp.StripPath, kongStripPath)
	cp.PreserveHost = unlessDefault(cp.PreserveHost, kongPreserveHost)
	cp.RequestBuffering = unlessDefault(cp.RequestBuffering, kongRequestBuffering)
	cp.ResponseBuffering = unlessDefault(cp.ResponseBuffering, kongRequestBuffering)
	if len(cp.Protocols) == len(kongRouteProtocols) && slices.EqualFunc(cp.Protocols, kongRouteProtocols, func(p *string, d string) bool { return p != nil && *p == d }) {
		cp.Protocols = nil
	}
	if cp.Expression == nil {
		cp.PathHandling = unlessDefault(cp.PathHandling, kongRoutePathHandle)
		cp.RegexPriority = unlessDefault(cp.RegexPriority, 0)
	}
	cp.Plugins = withoutPluginsDefaults(r.Plugins)
	return &cp
}

func withoutPluginsDefaults(ps []*file.FPlugin) []*file.FPlugin {
	if ps == nil {
		return nil
	}
	out := make([]*file.FPlugin, len(ps))
	for i, p := range ps {
		out[i] = withoutPluginDefaults(p)
	}
	return out
}

// withoutPluginDefaults is p without enabled when it is true (a copy).
func withoutPluginDefaults(p *file.FPlugin) *file.FPlugin {
	cp := *p
	cp.Enabled = unlessDefault(cp.Enabled, kongEnabled)
	return &cp
}

// withoutUpstreamDefaults is u with the fields Kong fills with the same value left out (a
// copy, with copies of its targets).
func withoutUpstreamDefaults(u *file.FUpstream) *file.FUpstream {
	cp := *u
	cp.Algorithm = unlessDefault(cp.Algorithm, kongUpstreamAlgo)
	cp.Slots = unlessDefault(cp.Slots, kongUpstreamSlots)
	cp.HashOn = unlessDefault(cp.HashOn, kongUpstreamHashOn)
	cp.HashFallback = unlessDefault(cp.HashFallback, kongUpstreamHashOn)
	cp.HashOnCookiePath = unlessDefault(cp.HashOnCookiePath, kongUpstreamCookie)
	cp.UseSrvName = unlessDefault(cp.UseSrvName, false)
	if u.Targets != nil {
		cp.Targets = make([]*file.FTarget, len(u.Targets))
		for i, t := range u.Targets {
			tc := *t
			tc.Weight = unlessDefault(tc.Weight, kongTargetWeight)
			cp.Targets[i] = &tc
		}
	}
	return &cp
}

// withoutContentDefaults leaves out of c (a rendered Content, which it modifies) what Kong
// fills with the same value: its services (routes and plugins), upstreams (targets) and
// top-level plugins.
func withoutContentDefaults(c *file.Content) {
	for i := range c.Services {
		c.Services[i] = *withoutServiceDefaults(&c.Services[i])
	}
	for i := range c.Upstreams {
		c.Upstreams[i] = *withoutUpstreamDefaults(&c.Upstreams[i])
	}
	for i := range c.Plugins {
		c.Plugins[i] = *withoutPluginDefaults(&c.Plugins[i])
	}
}
