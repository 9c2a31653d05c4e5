package manager

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/konductor/konductor/internal/config"
	"github.com/konductor/konductor/internal/store"
)

// gatedKinds are the kinds KIC watches only with a feature gate on: without it KIC runs no
// controller for them, its ClusterRole may not grant them, and konductor would not translate
// them anyway.
var gatedKinds = map[string][]store.Kind{
	config.GateKongServiceFacade: {store.KindKongServiceFacade},
	config.GateKongCustomEntity:  {store.KindKongCustomEntity},
	config.GateGatewayAlpha:      {store.KindTCPRoute, store.KindTLSRoute, store.KindUDPRoute, store.KindBackendTLSPolicy},
}

// kindsSwitchedOff are the kinds KIC would not watch with these flags and gates: those of its
// --enable-controller-* switches turned off and those of gates turned off (gatedKinds). They
// are neither watched nor read, so that KIC's ClusterRole is enough.
func kindsSwitchedOff(cfg *config.Config, log logr.Logger) store.KindSet {
	off := store.KindSet{}
	for _, gate := range slices.Sorted(maps.Keys(gatedKinds)) {
		if cfg.FeatureGates.Enabled(gate) {
			continue
		}
		for _, k := range gatedKinds[gate] {
			off[k] = struct{}{}
			log.V(1).Info("kind not watched: its feature gate is off, as in KIC", "kind", k.String(), "gate", gate)
		}
	}
	for _, name := range cfg.DisabledControllers {
		for _, kind := range config.ControllerKinds[name] {
			k, ok := store.KindNamed(kind)
			if !ok {
				panic("config.ControllerKinds names an unknown kind: " + kind) // a test keeps them in step
			}
			off[k] = struct{}{}
			log.Info("kind not watched: its controller is switched off", "kind", kind, "flag", "--enable-controller-"+name+"=false")
		}
	}
	return off
}

// kindsKICDoesNotRead are the kinds konductor reads that KIC does not: KIC's ClusterRole (its
// chart's, which konductor must run under unchanged) may not grant them.
var kindsKICDoesNotRead = []store.Kind{store.KindListenerSet}

// kindsForbiddenByRBAC are those of kindsKICDoesNotRead that the controller may not list (in
// the first watched namespace, or the cluster): each is left unwatched with a line saying what
// to grant, instead of holding the first sync until it can be listed, which is right for a kind
// KIC reads (its objects' routes would otherwise look deleted) but under KIC's ClusterRole would
// hold konductor forever for a kind KIC never served. Asked once, at start.
func kindsForbiddenByRBAC(ctx context.Context, restCfg *rest.Config, cfg *config.Config, candidates store.KindSet, versions store.Versions, log logr.Logger) (store.KindSet, error) {
	forbidden := store.KindSet{}
	var mc metadata.Interface
	for _, k := range kindsKICDoesNotRead {
		if !candidates.Has(k) {
			continue
		}
		if mc == nil {
			var err error
			if mc, err = metadata.NewForConfig(restCfg); err != nil {
				return nil, err
			}
		}
		gvk := k.GroupVersionKind()
		if v, ok := versions[k]; ok {
			gvk.Version = v
		}
		res := mc.Resource(gvk.GroupVersion().WithResource(k.Resource()))
		var err error
		if len(cfg.WatchNamespaces) > 0 {
			_, err = res.Namespace(cfg.WatchNamespaces[0]).List(ctx, metav1.ListOptions{Limit: 1})
		} else {
			_, err = res.List(ctx, metav1.ListOptions{Limit: 1})
		}
		switch {
		case apierrors.IsForbidden(err):
			forbidden[k] = struct{}{}
			log.Info("kind not watched: RBAC grants no list on it, and KIC (whose ClusterRole this may be) does not read it; grant get, list and watch on it (config/rbac) to serve it",
				"kind", k.String(), "resource", k.Resource())
		case err != nil:
			return nil, fmt.Errorf("listing %s: %w", k.Resource(), err)
		}
	}
	return forbidden, nil
}

// cacheSelector is the label selector k's informer is limited to: the kind's own and KIC's
// --secret-label-selector (a label key whose value must be "true"); nil for all objects.
// ConfigMaps are all cached since issue #40 (a BackendTLSPolicy's CA ConfigMap carries no
// label): konghq.com/ca-cert and --configmap-label-selector say which keep their data
// (configMapLabels, store.SecretPayloads).
func cacheSelector(k store.Kind, cfg *config.Config) labels.Selector {
	set := labels.Set{}
	for key, value := range k.CacheLabels() {
		set[key] = value
	}
	switch {
	case k == store.KindSecret && cfg.SecretLabelSelector != "":
		set[cfg.SecretLabelSelector] = "true"
	}
	if len(set) == 0 {
		return nil
	}
	return labels.SelectorFromSet(set)
}

// metricsFilter is KIC's --metrics-access-filter: with rbac, a request to /metrics must carry
// a bearer token that the API server authenticates (TokenReview) and authorizes for GET on the
// non-resource URL /metrics (SubjectAccessReview); the controller needs RBAC to create both.
func metricsFilter(cfg *config.Config) func(*rest.Config, *http.Client) (metricsserver.Filter, error) {
	if cfg.MetricsAccessFilter != "rbac" {
		return nil
	}
	return filters.WithAuthenticationAndAuthorization
}

// dbLessRefused is why a DB-less gateway is not synced: --skip-ca-certificates, which KIC
// refuses with DB-less Kong (a DB-less configuration is whole; leaving CA certificates out
// would break the services and plugins that name them). nil when nothing is refused.
func dbLessRefused(cfg *config.Config) error {
	var err error
	if cfg.SkipCACertificates {
		err = errors.New("--skip-ca-certificates is available only with database-backed Kong, as in KIC")
	}
	// KIC fails at start with an obscure "creating workspace" error there: a DB-less Kong has
	// only the default workspace (POST /config configures it).
	if ws := cfg.KongWorkspace; ws != "" && ws != "default" {
		err = errors.Join(err, fmt.Errorf("--kong-workspace %q is available only with database-backed Kong: a DB-less Kong has only the default workspace", ws))
	}
	return err
}

// configMapLabels are the labels (value "true") a ConfigMap carries for the cache to keep
// its data without a BackendTLSPolicy naming it: KIC reads only those ConfigMaps.
func configMapLabels(cfg *config.Config) []string {
	keys := []string{store.CACertLabel}
	if cfg.ConfigMapLabelSelector != "" {
		keys = append(keys, cfg.ConfigMapLabelSelector)
	}
	return keys
}
