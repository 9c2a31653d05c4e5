package manager

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/kong/go-kong/kong"
	corev1 "k8s.io/api/core/v1"

	"github.com/konductor/konductor/internal/config"
	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// Gateways is what a translation takes from the gateways it is for.
type Gateways struct {
	// Flavors are the routers and Kong versions the gateways said (GET /); nil or empty:
	// none said, the traditional router with PCRE's regexes and no version.
	Flavors *dataplane.RouterFlavors
	// Facts are asked whether the gateways are Kong Enterprise (KongLicense) and for the
	// schemas of the custom entity types in use; nil: not asked (nothing Enterprise, no
	// schema).
	Facts *dataplane.GatewayFacts
	// License is the Konnect license, when Konnect licenses the gateways; nil otherwise.
	License func() *kong.License
	// Discovered are the gateways found by discovery (nil without): their Admin API
	// addresses are the Admin API too, which no Service may make Kong connect to.
	Discovered dataplane.GatewaySet
}

// TranslationOptions are the options of a translation for cfg's controller and those
// gateways: the one source of the sync loop's rounds, the admission webhook's reviews,
// `konductor diff` and `konductor translate`, so that each renders what the controller would
// send those gateways (issue #42: diff used to pass the workspace only, and showed changes
// the controller never makes). snap is the snapshot to translate, whose custom entity types
// Facts is asked about (nil with Facts nil); now is when CA certificates must be valid (the
// loop passes the time of each round, so that translation itself reads no clock; zero: not
// checked).
func TranslationOptions(ctx context.Context, cfg *config.Config, gw Gateways, snap *store.Snapshot, now time.Time) translator.Options {
	opts := translator.Options{
		ClusterDomain:                           cfg.ClusterDomain,
		GatewayControllerName:                   cfg.GatewayAPIControllerName,
		EnableDrainSupport:                      cfg.EnableDrainSupport,
		AllowLocalTargets:                       cfg.AllowLocalTargets,
		ExternalNameServices:                    cfg.ExternalNameServices,
		AdminServices:                           cfg.KongAdminSvc,
		AdminHosts:                              adminHosts(cfg.KongAdminURLs),
		PluginsDenied:                           cfg.PluginsDenied,
		PluginsDeniedNamespaces:                 cfg.PluginsDeniedNamespaceSelector,
		HostOwnership:                           cfg.HostOwnership,
		ConsumerScope:                           cfg.ConsumerScope,
		RewriteURIs:                             cfg.FeatureGates.Enabled(config.GateRewriteURIs),
		NoCustomEntities:                        !cfg.FeatureGates.Enabled(config.GateKongCustomEntity),
		GatewayAlpha:                            cfg.FeatureGates.Enabled(config.GateGatewayAlpha),
		KongServiceFacade:                       cfg.FeatureGates.Enabled(config.GateKongServiceFacade),
		CombinedServicesFromDifferentHTTPRoutes: cfg.FeatureGates.Enabled(config.GateCombinedServicesFromDifferentHTTPRoutes),
		KonnectLicensing:                        cfg.Konnect.LicensingEnabled,
		// KIC keys the deterministic IDs with the workspace: without it a workspace KIC
		// filled would not be adopted, and two workspaces' IDs would collide.
		Workspace: cfg.KongWorkspace,
		Now:       now,
		// The router the gateways said: the webhook then refuses what a round would leave
		// out (a regex Rust's crate refuses under traditional_compatible and expressions).
		ExpressionRoutes: gw.Flavors.Expressions(),
		RustRegexes:      gw.Flavors.RustRegexes(),
		// The oldest Kong version the gateways run: KIC's version-dependent rendering (the
		// redirect plugin from 3.9, sticky sessions from 3.11).
		KongVersion: gw.Flavors.KongVersion(),
	}
	// The discovered gateways' Admin API addresses: an ExternalName of one is refused as its
	// Service's names are (a new set translates everything once).
	if gw.Discovered != nil {
		var urls []string
		for _, g := range gw.Discovered.Gateways() {
			urls = append(urls, g.URL())
		}
		opts.AdminHosts = adminHosts(append(slices.Clone(cfg.KongAdminURLs), urls...))
	}
	if snap != nil && cfg.PublishService != "" {
		// The Kong port behind each HTTP(S) port of the publish Service, from the Service in
		// the cache and the listens the gateways said (gatewayapi.HTTPRouterPorts, the
		// computation the Gateways' listener status reads too): HTTPRoutes attached to some
		// of their Gateways' ports only match those under the expressions router.
		opts.PublishService = cfg.PublishService
		opts.HTTPRouterPorts = gatewayapi.HTTPRouterPorts(snapshotService(snap, cfg.PublishService), gw.Flavors.Listens())
	}
	if gw.Facts != nil {
		var types []string
		if !opts.NoCustomEntities {
			types = translator.CustomEntityTypes(snap)
		}
		opts.Enterprise, opts.EntitySchemas = gw.Facts.Learn(ctx, types)
	}
	if gw.License != nil {
		opts.KonnectLicense = gw.License()
	}
	return opts
}

// snapshotService is the Service "namespace/name" of snap, nil when it has none (its
// namespace not watched, or no such Service).
func snapshotService(snap *store.Snapshot, name string) *corev1.Service {
	ns, n, _ := strings.Cut(name, "/")
	for _, svc := range snap.Services {
		if svc.Namespace == ns && svc.Name == n {
			return svc
		}
	}
	return nil
}

// adminHosts are the hosts of the Admin API URLs, which no Service may make Kong connect to,
// sorted, once each, so that the same gateways give the same options.
func adminHosts(urls []string) []string {
	var out []string
	for _, raw := range urls {
		if u, err := url.Parse(raw); err == nil && u.Hostname() != "" {
			out = append(out, u.Hostname())
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
