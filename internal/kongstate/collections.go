package kongstate

import (
	"sort"
	"strings"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
)

// This file says, for each list of a State the Renderer keeps the bytes of, how an entity
// is rendered and where it goes in the body: what State.Content and dbless make of it (the
// copy, the defaults, the order), one entity at a time. TestRendererMatchesDeclarativeConfig*
// compare the bodies with State.DeclarativeConfig's.

// The placeholders whose bytes in the body's skeleton are replaced by each list's entities.
// Their names cannot be Kubernetes-derived ones (those have no spaces), and the skeleton
// holds nothing else of these types.
var (
	markerService       = file.FService{Service: kong.Service{Name: kong.String("konductor placeholder service")}}
	markerUpstream      = file.FUpstream{Upstream: kong.Upstream{Name: kong.String("konductor placeholder upstream")}}
	markerConsumer      = file.FConsumer{Consumer: kong.Consumer{Username: kong.String("konductor placeholder consumer")}}
	markerConsumerGroup = file.FConsumerGroupObject{ConsumerGroup: kong.ConsumerGroup{Name: kong.String("konductor placeholder consumer group")}}
	markerPlugin        = file.FPlugin{Plugin: kong.Plugin{Name: kong.String("konductor placeholder plugin")}}
	markerCertificate   = file.FCertificate{Cert: kong.String("konductor placeholder certificate")}
	markerCACertificate = file.FCACertificate{CACertificate: kong.CACertificate{Cert: kong.String("konductor placeholder CA certificate")}}
	markerVault         = file.FVault{Vault: kong.Vault{Prefix: kong.String("konductor placeholder vault")}}
	markerMembership    = consumerGroupConsumer{Consumer: "konductor placeholder", ConsumerGroup: "konductor placeholder"}
)

var serviceCollection = collection[file.FService, string]{
	key: func(svc *file.FService) string { return str(svc.Name) },
	cmp: byNameDesc,
	render: func(svc *file.FService, quote bool) ([]byte, []byte, error) {
		b, err := renderEntity(svc, quote, appendService)
		return b, nil, err
	},
}

var upstreamCollection = collection[file.FUpstream, string]{
	key: func(u *file.FUpstream) string { return str(u.Name) },
	cmp: byNameDesc,
	render: func(u *file.FUpstream, quote bool) ([]byte, []byte, error) {
		b, err := renderEntity(u, quote, appendUpstream)
		return b, nil, err
	},
}

// pluginCollection: top-level plugins, by pluginKey descending, with fillPluginDefaults'
// defaults (the hand encoder's plugin, as for a service's plugins).
var pluginCollection = collection[file.FPlugin, string]{
	key: pluginKey,
	cmp: byNameDesc,
	render: func(p *file.FPlugin, quote bool) ([]byte, []byte, error) {
		b, err := renderEntity(p, quote, appendPlugin)
		return b, nil, err
	},
}

// consumerKey is what consumerLess orders consumers by.
type consumerKey struct {
	hasUsername        bool
	username, customID string
}

// consumerCollection: consumers in consumerLess's order, each without its groups, which
// dbless lists at the top level (consumer_group_consumers, the consumer's extra bytes).
var consumerCollection = collection[file.FConsumer, consumerKey]{
	key: func(c *file.FConsumer) consumerKey {
		return consumerKey{c.Username != nil, str(c.Username), str(c.CustomID)}
	},
	cmp: func(a, b consumerKey) int {
		if a.hasUsername != b.hasUsername {
			if a.hasUsername {
				return 1
			}
			return -1
		}
		if c := strings.Compare(a.username, b.username); c != 0 {
			return c
		}
		return strings.Compare(a.customID, b.customID)
	},
	render: func(c *file.FConsumer, quote bool) ([]byte, []byte, error) {
		// Content's copy: a deep one only changes the bytes of plugin configurations
		// (copied through JSON, renderPlugins); the rest renders the same from c's values.
		cp := *c
		if len(c.Plugins) > 0 {
			cp = *c.DeepCopy()
		}
		cp.Groups = nil
		own, err := renderJSON(&cp, quote)
		if err != nil || len(c.Groups) == 0 {
			return own, nil, err
		}
		ref := str(c.Username)
		if ref == "" {
			ref = str(c.ID)
		}
		var extra []byte
		for _, g := range c.Groups {
			b, err := renderJSON(consumerGroupConsumer{Consumer: ref, ConsumerGroup: str(g.Name)}, quote)
			if err != nil {
				return nil, nil, err
			}
			extra = append(extra, b...)
		}
		return own, extra, nil
	},
}

var consumerGroupCollection = collection[file.FConsumerGroupObject, string]{
	key: func(g *file.FConsumerGroupObject) string { return str(g.Name) },
	cmp: byNameDesc,
	render: func(g *file.FConsumerGroupObject, quote bool) ([]byte, []byte, error) {
		b, err := renderJSON(g.DeepCopy(), quote)
		return b, nil, err
	},
}

// certificateCollection: by certificate descending, SNIs by name.
var certificateCollection = collection[file.FCertificate, string]{
	key: func(c *file.FCertificate) string { return str(c.Cert) },
	cmp: byNameDesc,
	render: func(c *file.FCertificate, quote bool) ([]byte, []byte, error) {
		cp := c.DeepCopy()
		sort.SliceStable(cp.SNIs, func(i, j int) bool { return str(cp.SNIs[i].Name) < str(cp.SNIs[j].Name) })
		b, err := renderJSON(cp, quote)
		return b, nil, err
	},
}

var caCertificateCollection = collection[file.FCACertificate, string]{
	key: func(c *file.FCACertificate) string { return str(c.Cert) },
	cmp: byNameDesc,
	render: func(c *file.FCACertificate, quote bool) ([]byte, []byte, error) {
		b, err := renderJSON(&file.FCACertificate{CACertificate: *c.CACertificate.DeepCopy()}, quote)
		return b, nil, err
	},
}

var vaultCollection = collection[file.FVault, string]{
	key: func(v *file.FVault) string { return str(v.Prefix) },
	cmp: byNameDesc,
	render: func(v *file.FVault, quote bool) ([]byte, []byte, error) {
		b, err := renderJSON(&file.FVault{Vault: *v.Vault.DeepCopy()}, quote)
		return b, nil, err
	},
}
