package kongstate

import (
	"encoding/json"
	"sort"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
)

// FormatVersion is the declarative config format KIC renders for Kong 3.x.
const FormatVersion = "3.0"

// State is a Kong configuration as the translator builds it: decK file entities, in the
// order the translator produced them. Routes are nested in their service, targets in their
// upstream, SNIs in their certificate. Plugins holds top-level plugins; foreign keys of a
// plugin are given by name in the ID field of kong.Service / kong.Route / kong.Consumer /
// kong.ConsumerGroup, as decK files refer to them.
//
// A State is built by one goroutine and then only read; Content and DeclarativeConfig copy
// before they fill defaults or sort.
type State struct {
	Services     []*file.FService
	Upstreams    []*file.FUpstream
	Certificates []*file.FCertificate
	Plugins      []*file.FPlugin
	// Consumers carry their credentials, and their consumer groups by name in Groups.
	Consumers      []*file.FConsumer
	ConsumerGroups []*file.FConsumerGroupObject
	CACertificates []*file.FCACertificate
	Vaults         []*file.FVault
	// Licenses is Kong Enterprise's license, only for Enterprise gateways (custom.go).
	Licenses []*License
	// LicensesKnown is true when the State was translated for Kong Gateway Enterprise
	// (translator.Options.Enterprise): Licenses is then every license Kong should hold, none
	// included. Database mode diffs licenses only then (dbmode/doc.go), so that a round
	// translated before the gateways' edition was learned deletes no license.
	LicensesKnown bool
	// CustomEntities are the entities of KongCustomEntities, in KIC's order; DB-less
	// configuration only (custom.go).
	CustomEntities []*CustomEntity
	// CertificateAlts are the alternative (ECDSA) pairs of certificates, by certificate ID:
	// Kong's cert_alt/key_alt, which decK's file.FCertificate cannot carry (certalt.go).
	CertificateAlts map[string]CertificateAlt
}

// Content renders the decK file content (translation-rules.md §11): _format_version "3.0", the
// render-time defaults of §11.2, the sort order of §11.4, no _info. Deterministic: the same
// State gives an equal Content. The State itself is not modified.
func (s *State) Content() *file.Content {
	c := &file.Content{FormatVersion: FormatVersion}
	if s == nil {
		return c
	}
	for _, svc := range s.Services {
		if svc != nil {
			c.Services = append(c.Services, renderService(svc))
		}
	}
	sort.SliceStable(c.Services, func(i, j int) bool { return str(c.Services[i].Name) > str(c.Services[j].Name) })

	for _, u := range s.Upstreams {
		if u != nil {
			c.Upstreams = append(c.Upstreams, renderUpstream(u))
		}
	}
	sort.SliceStable(c.Upstreams, func(i, j int) bool { return str(c.Upstreams[i].Name) > str(c.Upstreams[j].Name) })

	for _, cert := range s.Certificates {
		if cert == nil {
			continue
		}
		cp := cert.DeepCopy()
		sort.SliceStable(cp.SNIs, func(i, j int) bool { return str(cp.SNIs[i].Name) < str(cp.SNIs[j].Name) })
		c.Certificates = append(c.Certificates, *cp)
	}
	sort.SliceStable(c.Certificates, func(i, j int) bool { return str(c.Certificates[i].Cert) > str(c.Certificates[j].Cert) })

	for _, p := range s.Plugins {
		if p == nil {
			continue
		}
		cp := p.DeepCopy()
		fillPluginDefaults(cp)
		c.Plugins = append(c.Plugins, *cp)
	}
	sort.SliceStable(c.Plugins, func(i, j int) bool { return pluginKey(&c.Plugins[i]) > pluginKey(&c.Plugins[j]) })

	for _, cons := range s.Consumers {
		if cons != nil {
			c.Consumers = append(c.Consumers, *cons.DeepCopy())
		}
	}
	sort.SliceStable(c.Consumers, func(i, j int) bool { return consumerLess(&c.Consumers[i].Consumer, &c.Consumers[j].Consumer) })
	for _, g := range s.ConsumerGroups {
		if g != nil {
			c.ConsumerGroups = append(c.ConsumerGroups, *g.DeepCopy())
		}
	}
	sort.SliceStable(c.ConsumerGroups, func(i, j int) bool { return str(c.ConsumerGroups[i].Name) > str(c.ConsumerGroups[j].Name) })
	for _, ca := range s.CACertificates {
		if ca != nil {
			c.CACertificates = append(c.CACertificates, file.FCACertificate{CACertificate: *ca.CACertificate.DeepCopy()})
		}
	}
	sort.SliceStable(c.CACertificates, func(i, j int) bool { return str(c.CACertificates[i].Cert) > str(c.CACertificates[j].Cert) })
	for _, v := range s.Vaults {
		if v != nil {
			c.Vaults = append(c.Vaults, file.FVault{Vault: *v.Vault.DeepCopy()})
		}
	}
	sort.SliceStable(c.Vaults, func(i, j int) bool { return str(c.Vaults[i].Prefix) > str(c.Vaults[j].Prefix) })
	for _, l := range s.Licenses {
		if l != nil {
			c.Licenses = append(c.Licenses, file.FLicense{License: *l.License.DeepCopy()})
		}
	}
	sort.SliceStable(c.Licenses, func(i, j int) bool { return str(c.Licenses[i].Payload) > str(c.Licenses[j].Payload) })
	return c
}

// Empty reports whether s holds no entity of any kind (nil entries are no entities): what a
// DB-less gateway would be sent is then the stub upstream alone (DeclarativeConfig). Custom
// entities count; LicensesKnown alone does not, nor do CertificateAlts (they only complete
// certificates). A fallback configuration that is Empty would wipe every route a gateway
// holds (fallback.go in internal/dataplane).
func (s *State) Empty() bool {
	if s == nil {
		return true
	}
	return none(s.Services) && none(s.Upstreams) && none(s.Certificates) && none(s.Plugins) &&
		none(s.Consumers) && none(s.ConsumerGroups) && none(s.CACertificates) && none(s.Vaults) &&
		none(s.Licenses) && none(s.CustomEntities)
}

// none reports whether every entry of es is nil.
func none[T any](es []*T) bool {
	for _, e := range es {
		if e != nil {
			return false
		}
	}
	return true
}

// renderService is svc as rendered: a copy with the render-time defaults and sorted routes
// and plugins.
func renderService(svc *file.FService) file.FService {
	return renderServiceShallow(svc.DeepCopy())
}

// renderServiceShallow is renderService without the deep copy: the service, its routes and
// plugins are copied (the defaults are set on the copies), but what they point to (names,
// hosts, paths, tags) is svc's. Nothing encodes through it any more: it is the reference
// rendering of a service, the one the hand-written encoder (encode.go's appendService) gives
// byte for byte what encoding/json gives for, as encode_test.go checks.
func renderServiceShallow(svc *file.FService) file.FService {
	cp := *svc
	if svc.Routes != nil {
		cp.Routes = make([]*file.FRoute, len(svc.Routes))
		for i, r := range svc.Routes {
			rc := *r
			rc.Plugins = renderPlugins(r.Plugins)
			fillRouteDefaults(&rc)
			cp.Routes[i] = &rc
		}
	}
	cp.Plugins = renderPlugins(svc.Plugins)
	sort.SliceStable(cp.Routes, func(i, j int) bool { return str(cp.Routes[i].Name) > str(cp.Routes[j].Name) })
	return cp
}

// renderPlugins are copies of ps with the render-time defaults, sorted. They are deep copies:
// a plugin's configuration is copied through JSON (kong.Configuration's DeepCopy), which turns
// invalid UTF-8 into U+FFFD characters, and State.Content's bytes are those of the copy.
func renderPlugins(ps []*file.FPlugin) []*file.FPlugin {
	if ps == nil {
		return nil
	}
	out := make([]*file.FPlugin, len(ps))
	for i, p := range ps {
		out[i] = p.DeepCopy()
	}
	fillPluginDefaults(out...)
	sortPluginsDesc(out)
	return out
}

// renderUpstream is u as rendered: a copy with the default algorithm and sorted targets.
func renderUpstream(u *file.FUpstream) file.FUpstream {
	cp := u.DeepCopy()
	if cp.Algorithm == nil {
		cp.Algorithm = kong.String("round-robin")
	}
	sort.SliceStable(cp.Targets, func(i, j int) bool {
		return str(cp.Targets[i].Target.Target) > str(cp.Targets[j].Target.Target)
	})
	return *cp
}

// consumerLess is KIC's consumer order (translation-rules.md §11.4), ascending: consumers without a
// username first, then by username, then by custom_id.
func consumerLess(a, b *kong.Consumer) bool {
	if (a.Username == nil) != (b.Username == nil) {
		return a.Username == nil
	}
	if str(a.Username) != str(b.Username) {
		return str(a.Username) < str(b.Username)
	}
	return str(a.CustomID) < str(b.CustomID)
}

// dblessContent is the body of DB-less POST /config: the decK content, with consumer group
// membership as Kong's declarative format takes it, a top-level consumer_group_consumers
// list, instead of groups nested in consumers (translation-rules.md §9.3).
type dblessContent struct {
	*file.Content
	ConsumerGroupConsumers []consumerGroupConsumer `json:"consumer_group_consumers,omitempty"`
}

type consumerGroupConsumer struct {
	Consumer      string `json:"consumer"`
	ConsumerGroup string `json:"consumer_group"`
}

// DeclarativeConfig renders the JSON body of DB-less POST /config: Content, plus the stub
// upstream {name: kong} when the document would otherwise be empty, as KIC sends it (§11.2),
// and one key per custom entity type. encoding/json writes struct fields in declaration order
// and map keys sorted, so the bytes depend only on the State.
func (s *State) DeclarativeConfig() ([]byte, error) {
	return s.declarativeConfig(false)
}

// DBLessConfig is DeclarativeConfig as a DB-less Kong is sent it: without the fields Kong
// fills with the value they hold (kongdefaults.go), which the configuration Kong holds does
// not tell apart. The Renderer's QuotedDeclarativeConfig is this, escaped.
func (s *State) DBLessConfig() ([]byte, error) {
	return s.declarativeConfig(true)
}

func (s *State) declarativeConfig(withoutKongDefaults bool) ([]byte, error) {
	var custom []*CustomEntity
	if s != nil {
		custom = s.CustomEntities
	}
	var alts map[string]CertificateAlt
	if s != nil {
		alts = s.CertificateAlts
	}
	c := s.Content()
	if withoutKongDefaults {
		withoutContentDefaults(c)
	}
	body, err := json.Marshal(dbless(c, len(custom) == 0))
	if err != nil {
		return nil, err
	}
	if body, err = withCertificateAlts(body, alts); err != nil {
		return nil, err
	}
	return withCustomEntities(body, custom)
}

// dbless is the DB-less body of c (which it modifies): the stub upstream of an otherwise
// empty configuration (when stub; custom entities also make it non-empty), consumer group
// membership at the top level.
func dbless(c *file.Content, stub bool) dblessContent {
	if stub && isEmpty(c) {
		c.Upstreams = []file.FUpstream{{Upstream: kong.Upstream{Name: kong.String("kong")}}}
	}
	out := dblessContent{Content: c}
	for i := range c.Consumers {
		cons := &c.Consumers[i]
		ref := str(cons.Username)
		if ref == "" {
			ref = str(cons.ID)
		}
		for _, g := range cons.Groups {
			out.ConsumerGroupConsumers = append(out.ConsumerGroupConsumers, consumerGroupConsumer{Consumer: ref, ConsumerGroup: str(g.Name)})
		}
		cons.Groups = nil
	}
	return out
}

func isEmpty(c *file.Content) bool {
	return len(c.Services) == 0 && len(c.Routes) == 0 && len(c.Consumers) == 0 &&
		len(c.ConsumerGroups) == 0 && len(c.Plugins) == 0 && len(c.FilterChains) == 0 &&
		len(c.Upstreams) == 0 && len(c.Certificates) == 0 && len(c.CACertificates) == 0 &&
		len(c.Vaults) == 0 && len(c.Licenses) == 0 && len(c.CustomEntities) == 0 &&
		len(c.Partials) == 0 && len(c.Keys) == 0 && len(c.KeySets) == 0
}

// fillRouteDefaults fills what KIC fills at render time for the traditional router.
// fillPluginDefaults is what konductor keeps of KIC's render step for plugins (translation-rules.md
// §11.3, docs/kong-facts.md "Plugin defaults"): no run_on (Kong 3 has no such field and refuses
// the whole configuration over it). KIC also fills, from the plugin's schema on the gateway,
// the config defaults, protocols (the schema's default: grpc, grpcs, http, https for Kong's
// plugins) and enabled; konductor leaves the three unset, as KIC's rendering without a schema
// does, and Kong fills the same values from the same schema: a DB-less Kong stores what KIC's
// filled configuration gives, and in database mode go-database-reconciler fills them from the
// schema before it compares, so a Kong KIC wrote sees no update. Sending [http, https], as
// konductor did, updated every plugin on a takeover.
func fillPluginDefaults(ps ...*file.FPlugin) {
	for _, p := range ps {
		p.RunOn = nil
	}
}

func fillRouteDefaults(r *file.FRoute) {
	if r.HTTPSRedirectStatusCode == nil {
		r.HTTPSRedirectStatusCode = kong.Int(426)
	}
	if r.PathHandling == nil && r.Expression == nil {
		r.PathHandling = kong.String("v0") // traditional router only (translation-rules.md §11.2)
	}
}

func sortPluginsDesc(ps []*file.FPlugin) {
	sort.SliceStable(ps, func(i, j int) bool { return str(ps[i].Name) > str(ps[j].Name) })
}

// pluginKey is KIC's sort key of top-level plugins: the name and the foreign keys
// concatenated in the order consumer, consumer group, route, service.
func pluginKey(p *file.FPlugin) string {
	k := str(p.Name)
	if p.Consumer != nil {
		k += str(p.Consumer.ID)
	}
	if p.ConsumerGroup != nil {
		k += str(p.ConsumerGroup.ID)
	}
	if p.Route != nil {
		k += str(p.Route.ID)
	}
	if p.Service != nil {
		k += str(p.Service.ID)
	}
	return k
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// AllPlugins lists every plugin of s: global ones and those nested in services, routes and
// consumers (consumer-group plugins have another type and are not listed). For mapping an
// error about a plugin name back to the plugins, and so to their objects.
func (s *State) AllPlugins() []*file.FPlugin {
	if s == nil {
		return nil
	}
	out := append([]*file.FPlugin(nil), s.Plugins...)
	for _, svc := range s.Services {
		out = append(out, svc.Plugins...)
		for _, r := range svc.Routes {
			out = append(out, r.Plugins...)
		}
	}
	for _, c := range s.Consumers {
		out = append(out, c.Plugins...)
	}
	return out
}
