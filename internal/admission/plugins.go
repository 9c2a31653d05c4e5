package admission

import (
	"context"
	"fmt"
	"strings"

	"github.com/kong/go-kong/kong"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongrules"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// GatewaySchemas validates a plugin against the schema of a running gateway: Kong's
// POST /schemas/plugins/validate (go-kong's Plugins.Validate). It is asked only about plugins
// whose schema konductor does not know (custom plugins, Enterprise plugins).
type GatewaySchemas interface {
	// ValidatePlugin returns whether a gateway accepts plugin, with Kong's message when it
	// does not; an error when no gateway could be asked.
	ValidatePlugin(ctx context.Context, plugin *kong.Plugin) (valid bool, message string, err error)
}

// pluginVerdict is what checking one plugin's configuration found.
type pluginVerdict struct {
	errors  []string // each names the plugin object and the field
	warning string   // set when the plugin could not be checked
	// awaiting: the configuration cannot be built because a Secret it reads does not
	// exist (yet); errors say which.
	awaiting bool
}

// checkPlugin validates the configuration obj (a KongPlugin or KongClusterPlugin) has in
// snap: built as translation builds it, then checked against Kong's schema.
func checkPlugin(ctx context.Context, snap *store.Snapshot, k store.Kind, obj client.Object, gateways GatewaySchemas) pluginVerdict {
	ref := refOf(k, obj)
	plugin, problems := translator.PluginEntity(snap, obj)
	if plugin == nil {
		var v pluginVerdict
		for _, p := range problems {
			v.errors = append(v.errors, p.String())
			v.awaiting = v.awaiting || awaitsAnotherObject(p.Message)
		}
		return v
	}
	name := kong.StringValue(plugin.Name)
	if name == "" {
		return pluginVerdict{errors: []string{ref.String() + ": plugin: plugin name cannot be empty"}}
	}
	if kongrules.KnownPlugin(name) {
		_, errs := kongrules.ValidatePluginConfig(name, plugin.Config)
		var v pluginVerdict
		for _, e := range errs {
			field := "config"
			if e.Field != "" {
				field = e.Field
			}
			v.errors = append(v.errors, fmt.Sprintf("%s: %s: plugin %q failed schema validation: %s", ref, field, name, e.Message))
		}
		return v
	}
	if gateways == nil {
		return pluginVerdict{warning: fmt.Sprintf("%s: the schema of plugin %q is not known to konductor and no gateway is configured to check it; its configuration was not validated", ref, name)}
	}
	ok, msg, err := gateways.ValidatePlugin(ctx, plugin)
	switch {
	case err != nil:
		return pluginVerdict{warning: fmt.Sprintf("%s: the schema of plugin %q is not known to konductor and no gateway could check it (%v); its configuration was not validated", ref, name, err)}
	case !ok:
		return pluginVerdict{errors: []string{fmt.Sprintf("%s: config: plugin %q failed schema validation: %s", ref, name, strings.TrimSpace(msg))}}
	}
	return pluginVerdict{}
}
