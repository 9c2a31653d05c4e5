package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// KIC's feature gates (its pkg/manager/config), with KIC's defaults except one (below). konductor accepts every
// name KIC accepts, so a KIC Deployment's --feature-gates carries over; a gate whose setting
// would change what Kong receives in a way konductor does not implement fails at start
// rather than being ignored.
const (
	GateGatewayAlpha                            = "GatewayAlpha"
	GateFillIDs                                 = "FillIDs"
	GateRewriteURIs                             = "RewriteURIs"
	GateKongServiceFacade                       = "KongServiceFacade"
	GateSanitizeKonnectConfigDumps              = "SanitizeKonnectConfigDumps"
	GateFallbackConfiguration                   = "FallbackConfiguration"
	GateKongCustomEntity                        = "KongCustomEntity"
	GateCombinedServicesFromDifferentHTTPRoutes = "CombinedServicesFromDifferentHTTPRoutes"
	GateStickySessionsTerminatingEndpoints      = "StickySessionsTerminatingEndpoints"
)

// FeatureGates maps every gate to whether it is on.
type FeatureGates map[string]bool

// Enabled reports whether gate is on.
func (g FeatureGates) Enabled(gate string) bool { return g[gate] }

// defaultGates are KIC's defaults, with one deliberate difference: FallbackConfiguration is on.
// In KIC it is off, and one object Kong refuses then holds every later change back on DB-less
// gateways until someone fixes it; konductor leaves the refused objects and their dependents
// out instead (translation-rules.md §12.3). --feature-gates FallbackConfiguration=false restores KIC's
// behaviour: the gateway keeps its last good configuration and nothing newer reaches it.
func defaultGates() FeatureGates {
	return FeatureGates{
		GateGatewayAlpha:                            false,
		GateFillIDs:                                 true,
		GateRewriteURIs:                             false,
		GateKongServiceFacade:                       false,
		GateSanitizeKonnectConfigDumps:              true,
		GateFallbackConfiguration:                   true,
		GateKongCustomEntity:                        true,
		GateCombinedServicesFromDifferentHTTPRoutes: false,
		GateStickySessionsTerminatingEndpoints:      false,
	}
}

// unsupportedGates are the settings konductor refuses: each would change the configuration
// Kong receives, and konductor does not implement it.
var unsupportedGates = map[string]bool{
	GateFillIDs:                            false, // konductor always fills KIC's IDs
	GateStickySessionsTerminatingEndpoints: true,
}

// ParseFeatureGates reads KIC's --feature-gates value ("Name=true,Other=false") over KIC's
// defaults. An unknown gate, a value that is not a bool, or a setting konductor does not
// implement is an error naming the gate.
func ParseFeatureGates(s string) (FeatureGates, error) {
	gates := defaultGates()
	for _, kv := range splitList(s) {
		name, value, ok := strings.Cut(kv, "=")
		name = strings.TrimSpace(name)
		if !ok {
			return nil, fmt.Errorf("--feature-gates: %q is not Name=true|false", kv)
		}
		if _, known := gates[name]; !known {
			return nil, fmt.Errorf("--feature-gates: %s is not a valid feature; known: %s", name, strings.Join(gates.names(), ", "))
		}
		on, err := strconv.ParseBool(strings.TrimSpace(value))
		if err != nil {
			return nil, fmt.Errorf("--feature-gates: %s=%s: not a bool", name, value)
		}
		if bad, listed := unsupportedGates[name]; listed && bad == on {
			return nil, fmt.Errorf("--feature-gates: %s=%t is not supported by konductor", name, on)
		}
		gates[name] = on
	}
	if gates[GateKongCustomEntity] && !gates[GateFillIDs] {
		return nil, fmt.Errorf("--feature-gates: %s is required if %s is enabled", GateFillIDs, GateKongCustomEntity)
	}
	return gates, nil
}

func (g FeatureGates) names() []string {
	out := make([]string, 0, len(g))
	for n := range g {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
