package manager

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/kong/go-kong/kong"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crconfig "sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmanager "sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/konductor/konductor/internal/admission"
	"github.com/konductor/konductor/internal/config"
	"github.com/konductor/konductor/internal/dataplane"
	gatewaydiscovery "github.com/konductor/konductor/internal/dataplane/discovery"
	"github.com/konductor/konductor/internal/diagnostics"
	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/redact"
	"github.com/konductor/konductor/internal/status"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// Options are what the binary (or a test running the controller in-process) adds to Config.
type Options struct {
	// RestConfig overrides the kubeconfig / in-cluster configuration.
	RestConfig *rest.Config
	Logger     logr.Logger
	// DBMode builds the gateway of a database-backed Kong. Nil: DBModeFactory(cfg).
	DBMode dataplane.DBModeFactory

	// ReleaseLeaseOnCancel is true by default (a clean shutdown hands over at once); tests
	// set it false through KeepLeaseOnCancel to act out a killed leader.
	KeepLeaseOnCancel bool
	// Clock and loop tuning for tests; zero values take the loop's defaults.
	Quiet time.Duration

	// SnapshotSourceForTesting replaces the store the sync loop reads. It exists for the
	// control test that reproduces the pre-konductor design; never set it elsewhere.
	SnapshotSourceForTesting func(c cache.Cache) dataplane.SnapshotSource
	// SkipCacheBarrierForTesting: see dataplane.Options.
	SkipCacheBarrierForTesting bool
	// Version is konductor's version (Konnect's nodes say it); "" is "dev".
	Version string
	// KonnectRootCAs verify Konnect's certificate instead of the system's roots (tests: the
	// emulator's).
	KonnectRootCAs *x509.CertPool
}

// Controller is an assembled, not yet started, controller.
type Controller struct {
	mgr      ctrlmanager.Manager
	webhook  *admission.Server // nil when --admission-webhook-listen is off
	barrier  *dataplane.InformerBarrier
	loop     *dataplane.Loop
	store    *store.Store
	cfg      *config.Config // leader election decided
	election LeaderElection
	log      logr.Logger
	gateways []dataplane.Gateway // the --kong-admin-url ones (none with discovery)
	facts    *dataplane.GatewayFacts
}

// New builds the controller. It waits for the Kubernetes API server to answer (apiwait.go),
// then talks to it (discovery) and, when leader election is left to it, asks each gateway
// GET / (DecideLeaderElection); it sends Kong no configuration.
func New(ctx context.Context, cfg *config.Config, opts Options) (*Controller, error) {
	log := opts.Logger
	// The steps of the start log their time since here at V(1) (docs/performance.md, Start).
	started := time.Now()
	// The scheme (about 10 ms of CPU, first read after discovery) is built while the kubeconfig
	// is read and the API server answers, instead of on the path after them.
	go store.Scheme()
	restCfg := opts.RestConfig
	if restCfg == nil {
		var err error
		if restCfg, err = restConfig(cfg.Kubeconfig, cfg.APIServerHost); err != nil {
			return nil, err
		}
	}

	disableWatchListClient()
	restCfg = apiServerConfig(restCfg, cfg)
	for _, n := range cfg.Notes {
		log.Info("flag or variable without effect", "flag", n.Flag, "why", n.Why)
	}
	if cfg.KongAdminURLsIgnored {
		log.Info("--kong-admin-url is not used with gateway discovery (--kong-admin-svc), as in KIC", "urls", cfg.KongAdminURLs)
	}

	health, err := newAPIHealthFor(ctx, restCfg, log.WithName("kubernetes-api"))
	if err != nil {
		return nil, err
	}
	// An API server away at start is waited for, not a reason to exit (apiwait.go); so is one
	// gone again at any later step that talks to it before the manager runs (startStep).
	ep := startEndpoints{healthProbe: cfg.HealthProbeBindAddress, metrics: cfg.MetricsBindAddress}
	if err := health.waitUntilServing(ctx, ep); err != nil {
		return nil, fmt.Errorf("waiting for the Kubernetes API server: %w", err)
	}
	log.V(1).Info("start: API server answered", "sinceStart", time.Since(started).String())
	// Discovery's requests, one per group version, all go out at once (startdiscovery.go), and
	// with them the REST mapper's discovery and the CRDs' list, which need no answer of
	// discovery's (their steps below take these answers, or ask again).
	kongKindsServed := make(chan []string, 1)
	go func() { kongKindsServed <- servedKongKinds(restCfg) }()
	mapper, err := restMapperFor(restCfg)
	if err != nil {
		return nil, err
	}
	mapperAsked := askMapper(mapper)
	crdsAsked := make(chan crdsListing, 1)
	go func() {
		listable, err := mayListCRDs(ctx, restCfg, log.WithName("crds"))
		crdsAsked <- crdsListing{listable, err}
	}()
	optional, versions, off, readKinds, err := kindsToRead(ctx, cfg, restCfg, health, ep, log)
	if err != nil {
		return nil, err
	}
	log.V(1).Info("start: API discovery done", "sinceStart", time.Since(started).String())

	election, err := DecideLeaderElection(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	log.Info("leader election decided", "enabled", election.Enabled, "reason", election.Reason)
	decided := *cfg
	decided.LeaderElect, decided.LeaderElectAuto = election.Enabled, false
	cfg = &decided

	electionNS := cfg.ElectionNamespace
	if cfg.LeaderElect && electionNS == "" {
		if electionNS = podNamespace(cfg.Pod); electionNS == "" {
			return nil, errors.New("--election-namespace: required when not running in a Pod (no POD_NAMESPACE and no service account namespace)")
		}
	}

	// Secrets the translation does not refer to are cached without their data; the manager's
	// uncached reader loads one that becomes referenced (store.SecretPayloads).
	payloads := store.NewSecretPayloads(nil)
	// A list or watch failing with NotFound asks whether an optional kind's CRD is gone
	// (optionalKinds, made once the manager exists).
	var crds *optionalKinds
	cacheOpts := cacheOptions(cfg, payloads, readKinds, log, func(kind string, err error) {
		if crds != nil {
			crds.watchFailed(kind, err)
		}
	})
	// The REST mappings of the kinds read, and whether CRDs may be listed, are asked now, while
	// an API server gone again can still be waited for with the probes served (the manager
	// binds the probes' address when it is constructed); the informers registered below then
	// ask the API server nothing.
	if err := health.startStep(ctx, ep, "REST mappings of the kinds read", func() error {
		if mapperAsked != nil { // the mapper's answer asked for with discovery, then anew
			err := <-mapperAsked
			mapperAsked = nil
			if err != nil {
				return err
			}
		}
		return mapKinds(mapper, readKinds, versions)
	}); err != nil {
		return nil, err
	}
	var crdsListable bool
	if err := health.startStep(ctx, ep, "listing the CustomResourceDefinitions", func() (err error) {
		if crdsAsked != nil { // the answer asked for with discovery, then anew
			answer := <-crdsAsked
			crdsAsked = nil
			crdsListable, err = answer.listable, answer.err
			return err
		}
		crdsListable, err = mayListCRDs(ctx, restCfg, log.WithName("crds"))
		return err
	}); err != nil {
		return nil, err
	}
	mgr, err := newManager(ctx, cfg, restCfg, cacheOpts, mapper, electionNS, opts, health, ep, log)
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	log.V(1).Info("start: manager constructed", "sinceStart", time.Since(started).String())

	// Register every informer now, before the manager starts: the cache then starts them on
	// every replica, so a standby's cache is warm when it gains the lease (invariant 3).
	trigger := dataplane.NewTrigger()
	// What the gateways say of their router decides how routes are rendered; learning it
	// (or a change) asks for a new round.
	flavors := dataplane.NewRouterFlavors(trigger.Request)
	var objs []client.Object
	for _, k := range readKinds.Sorted() {
		objs = append(objs, versions.NewObject(k))
	}
	barrier, err := dataplane.NewInformerBarrier(ctx, mgr.GetCache(), objs...)
	if err != nil {
		return nil, err
	}
	log.V(1).Info("start: informers registered", "sinceStart", time.Since(started).String())
	barrier.LogEachSync(ctx, log.WithName("cache"), started)
	relevance := &translator.Relevance{IngressClass: cfg.IngressClass}
	// CRDs installed or removed while the controller runs change the kinds the store reads.
	live := store.NewLiveKindsAt(optional, versions)
	// The store is made here so that the loop's snapshots can follow the events (the
	// Follower notes each changed object before the trigger wakes the round).
	st := store.New(mgr.GetCache(), store.Options{
		IngressClass: cfg.IngressClass, Namespaces: cfg.WatchNamespaces, Kinds: optional, Live: live,
		Off: off, Gateway: cfg.GatewayToReconcile,
	})
	follower := st.Follow()
	if err := barrier.AddEventHandler(follower.Recording(trigger.FilteredEventHandler(relevance))); err != nil {
		return nil, err
	}

	served, err := servedByDiscovery(restCfg)
	if err != nil {
		return nil, err
	}
	crds = newOptionalKinds(mgr.GetCache(), barrier, live, served, trigger.Request, health, log.WithName("crds"))
	crds.ignore(off)
	if err := crds.watchCRDs(ctx, mgr.GetCache(), crdsListable); err != nil {
		return nil, err
	}
	if err := mgr.Add(crds); err != nil {
		return nil, err
	}
	payloads.SetReader(mgr.GetAPIReader())
	// The loop's rounds read what changed since the previous one (issue #13); everything
	// else reads the store.
	var source dataplane.SnapshotSource = payloads.Source(follower)
	if opts.SnapshotSourceForTesting != nil {
		source = opts.SnapshotSourceForTesting(mgr.GetCache())
	}

	dbMode := opts.DBMode
	if dbMode == nil {
		dbMode = DBModeFactory(cfg, log)
	}
	var gateways []dataplane.Gateway
	var discovered dataplane.GatewaySet
	var learnRouters func(context.Context) // a standby's
	var discoverySet *gatewaydiscovery.Set
	if cfg.Discovery() {
		if discoverySet, err = gatewayDiscovery(ctx, cfg, mgr.GetCache(), dbMode, flavors, log.WithName("discovery")); err != nil {
			return nil, err
		}
		discovered, learnRouters = discoverySet, discoverySet.LearnRouters
	} else if gateways, err = buildGateways(cfg, dbMode, flavors, election.Roots, log); err != nil {
		return nil, err
	} else {
		learnRouters = staticRouterLearner(gateways, flavors, log.WithName("standby"))
	}
	reporter := dataplane.Reporters{graphFollowers{relevance: relevance, payloads: payloads}}
	var events record.EventRecorder = mgr.GetEventRecorderFor("konductor") //nolint:staticcheck // core/v1 events keep every message (see status.Reporter)
	if !cfg.EmitKubernetesEvents {
		events = &record.FakeRecorder{} // KIC's --emit-kubernetes-events=false: a recorder that drops them
	}
	promMetrics := status.NewMetrics(metrics.Registry, instanceID(cfg.Pod))
	reporter = append(reporter, status.NewReporter(events, promMetrics, podReference(cfg.Pod), log))
	var podOf podLookup
	if discoverySet != nil {
		podOf = discoverySet.PodOf
	}
	konnectParts, err := setupKonnect(cfg, opts.Version, opts.KonnectRootCAs, mgr, flavors, podOf, trigger.Request, promMetrics, log)
	if err != nil {
		return nil, err
	}
	reporter = append(reporter, konnectParts.reporters...)
	status.RegisterControllerState(metrics.Registry, barrier.Synced, func() bool {
		select {
		case <-mgr.Elected():
			return true
		default:
			return false
		}
	})
	writers, err := statusWriters(cfg, st, mgr, barrier, flavors, log)
	if err != nil {
		return nil, err
	}
	reporter = append(reporter, writers...)
	// Whether the gateways are Kong Enterprise (KongLicense) and the schemas of custom entity
	// types (KongCustomEntity) are asked of the gateways, once, as translation needs them.
	gatewayClients, err := gatewaySchemas(cfg, gateways, discovered)
	if err != nil {
		return nil, err
	}
	facts := dataplane.NewGatewayFacts(gatewayClients)
	var syncProtocol func() string // a standby's: what its gateways are sent
	if discoverySet != nil {
		// The set's GET / of each discovered gateway also tells facts its edition.
		discoverySet.ShareRootsWith(facts)
		syncProtocol = discoverySet.SyncProtocol
	}
	roundOptions := translationOptions(cfg, flavors, discovered, facts, konnectParts.license)
	// One incremental translation and one renderer for the standby and then the leader
	// (handover.go): the new leader's first round starts from the standby's last.
	shared := &handover{options: roundOptions,
		around: func(s *store.Snapshot, build func(*store.Snapshot) translator.Result) translator.Result {
			return translateWithPayloads(ctx, payloads, s, build, log)
		}}
	diag, err := diagnosticsServer(cfg, mgr, log)
	if err != nil {
		return nil, err
	}
	loopOpts := dataplane.Options{
		Source:  source,
		Barrier: barrier,
		Translate: func(s *store.Snapshot) translator.Result {
			opts := roundOptions(s)
			return translateWithPayloads(ctx, payloads, s, func(s *store.Snapshot) translator.Result { return translator.Build(s, opts) }, log)
		},
		Fallback:                      cfg.FeatureGates.Enabled(config.GateFallbackConfiguration),
		UseLastValidConfigForFallback: cfg.UseLastValidConfigForFallback,
		Gateways:                      gateways,
		Discovery:                     discovered,
		Trigger:                       trigger,
		Reporter:                      reporter,
		Logger:                        log.WithName("sync"),
		Period:                        cfg.ProxySyncPeriod,
		CacheSyncTimeout:              cfg.CacheSyncTimeout,
		ReverseSync:                   cfg.EnableReverseSync,
		Quiet:                         opts.Quiet,

		SkipCacheBarrierForTesting: opts.SkipCacheBarrierForTesting,
	}
	// Rounds translate what changed since the previous one (issue #13).
	shared.loopRounds(&loopOpts, log)
	if diag != nil {
		loopOpts.Diagnostics = diag.Diagnostics() // a nil interface without --dump-config
	}
	loop := dataplane.NewLoop(loopOpts)
	if err := mgr.Add(loop); err != nil {
		return nil, err
	}
	// A fresh leader writes every Ingress's status while changes are made, a route change
	// writes Gateways and routes: every status writer's writes wait for the syncs (issue #13).
	for _, r := range reporter {
		if w, ok := r.(status.GatedWriter); ok {
			w.WaitForSyncs(loop.SyncGate())
		}
	}
	if cfg.LeaderElect && (len(gateways) > 0 || discovered != nil) && opts.SnapshotSourceForTesting == nil {
		// A standby prepares its first sync to database-backed gateways (discovered ones
		// are not: their set is the leader's to follow; it learns their router and keeps
		// its translation warm). Not in the control test of the
		// pre-konductor design (SnapshotSourceForTesting), which had no standby work: its
		// store starts filling at its first read, which must be the new leader's.
		// It translates with the loop's incremental translator and renderer, which the loop
		// takes over when this replica leads (handover.go).
		if err := mgr.Add(&standbyPreparer{elected: mgr.Elected(), barrier: barrier, source: source, shared: shared,
			gateways: gateways, learnRouters: learnRouters, syncProtocol: syncProtocol, period: cfg.ProxySyncPeriod, log: log.WithName("standby")}); err != nil {
			return nil, err
		}
	}

	var webhook *admission.Server
	if cfg.AdmissionWebhook.Enabled() {
		// The webhook sees a Secret the cache keeps without its data as absent (it then warns
		// that the Secret is awaited), never as empty.
		if webhook, err = admissionWebhook(cfg, payloads.Source(st), barrier, gateways, discovered, flavors, mgr, log.WithName("admission")); err != nil {
			return nil, err
		}
	}

	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("sync", readiness(barrier, mgr.Elected(), loop.Ready, konnectParts.license)); err != nil {
		return nil, err
	}
	gatewaysLog := any(cfg.KongAdminURLs)
	if cfg.Discovery() {
		gatewaysLog = fmt.Sprintf("discovered from %v, ports %v", cfg.KongAdminSvc, cfg.KongAdminSvcPortNames)
	}
	// Asked with discovery for this line only: its answer (two round trips in a row, which
	// used to hold up the start by 10-20 ms) is logged when it comes.
	go func() {
		if kinds := untranslatedKongKinds(<-kongKindsServed, readKinds, off); len(kinds) > 0 {
			log.Info("Kong CRDs installed whose objects konductor does not translate yet; in DB-less mode what KIC made of such objects does not survive the switch (docs/migration-from-kic.md)",
				"kinds", strings.Join(kinds, ","))
		}
	}()
	log.Info("controller assembled", "kinds", readKinds.String(), "gateways", gatewaysLog,
		"ingressClass", cfg.IngressClass, "leaderElection", cfg.LeaderElect)
	return &Controller{mgr: mgr, webhook: webhook, barrier: barrier, loop: loop, cfg: cfg, election: election, log: log,
		gateways: gateways, facts: facts}, nil
}

// translationOptions are the options each round translates with: the router and version the
// gateways said, whether they are Kong Enterprise and the schemas of the custom entity types
// in use (facts, asked once), and the Konnect license when it is Konnect's (license not nil).
func translationOptions(cfg *config.Config, flavors *dataplane.RouterFlavors, discovered dataplane.GatewaySet, facts *dataplane.GatewayFacts, license func() *kong.License) func(*store.Snapshot) translator.Options {
	return func(s *store.Snapshot) translator.Options {
		opts := routerTranslatorOptions(cfg, flavors, discovered, time.Now())
		var types []string
		if !opts.NoCustomEntities {
			types = translator.CustomEntityTypes(s)
		}
		opts.Enterprise, opts.EntitySchemas = facts.Learn(context.Background(), types)
		if license != nil {
			opts.KonnectLicense = license()
		}
		return opts
	}
}

// diagnosticsServer is KIC's diagnostics server, added to mgr: --dump-config's dumps and
// --profiling's pprof, on --diagnostic-server-port as in KIC; nil without either.
func diagnosticsServer(cfg *config.Config, mgr ctrlmanager.Manager, log logr.Logger) (*diagnostics.Server, error) {
	if !cfg.DumpConfig && !cfg.Profiling {
		return nil, nil
	}
	diag := diagnostics.New(diagnostics.Options{
		Port: cfg.DiagnosticServerPort, DumpConfig: cfg.DumpConfig, DumpSensitiveConfig: cfg.DumpSensitiveConfig,
		Profiling: profilingHandlers(cfg.Profiling), Logger: log.WithName("diagnostics"),
	})
	return diag, mgr.Add(diag)
}

// graphFollowers are told the object graph of each translation of the whole snapshot (not
// of a fallback's, which leaves objects out): it says which objects the next events can
// matter for (relevance) and which Secrets' payloads the cache keeps (payloads).
type graphFollowers struct {
	relevance *translator.Relevance
	payloads  *store.SecretPayloads
}

// Report implements dataplane.Reporter.
func (f graphFollowers) Report(_ context.Context, r dataplane.Round) {
	if r.Graph != nil {
		f.relevance.SetGraph(r.Graph)
		f.payloads.SetReferenced(secretReferenced(r.Graph))
	}
}

// cacheOptions are the cache's: Secrets' payloads dropped unless referenced (payloads), the
// kinds read with their label selectors, the watched namespaces; watchFailed is told each
// kind whose list or watch fails.
func cacheOptions(cfg *config.Config, payloads *store.SecretPayloads, readKinds store.KindSet, log logr.Logger, watchFailed func(kind string, err error)) cache.Options {
	cacheOpts := cache.Options{
		Scheme:                      store.Scheme(),
		DefaultTransform:            payloads.Transform,
		DefaultWatchErrorHandler:    watchErrorLogger(log, watchFailed),
		ReaderFailOnMissingInformer: true, // every kind read must have been registered up front
		// The Secrets' list is read in pages whose payloads are dropped page by page, so their
		// first list never holds every Secret's data at once (store.PagedList).
		NewInformer: newInformerPagingSecrets(payloads.Transform),
	}
	for _, k := range readKinds.Sorted() {
		if sel := cacheSelector(k, cfg); sel != nil {
			if cacheOpts.ByObject == nil {
				cacheOpts.ByObject = map[client.Object]cache.ByObject{}
			}
			cacheOpts.ByObject[k.NewObject()] = cache.ByObject{Label: sel}
		}
	}
	if len(cfg.WatchNamespaces) > 0 {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range cfg.WatchNamespaces {
			cacheOpts.DefaultNamespaces[ns] = cache.Config{}
		}
		// Discovery reads the admin Services' EndpointSlices from the cache (KIC adds the
		// namespace of --publish-service the same way). The store still reads only the
		// watched namespaces.
		for _, svc := range cfg.KongAdminSvc {
			cacheOpts.DefaultNamespaces[svc.Namespace] = cache.Config{}
		}
	}
	return cacheOpts
}

// newManager constructs controller-runtime's manager: the cache (waiting out an API server
// outage, its sync waited for on the informers' channels), leader election, metrics, probes.
// Constructing it asks discovery whether the kinds with options are namespaced.
func newManager(ctx context.Context, cfg *config.Config, restCfg *rest.Config, cacheOpts cache.Options, mapper meta.RESTMapper, electionNS string,
	opts Options, health *apiHealth, ep startEndpoints, log logr.Logger) (ctrlmanager.Manager, error) {
	leaseDuration, renewDeadline, retryPeriod := cfg.ElectionLeaseDuration, cfg.ElectionRenewDeadline, cfg.ElectionRetryPeriod
	var mgr ctrlmanager.Manager
	err := health.startStep(ctx, ep, "constructing the manager", func() (err error) {
		mgr, err = ctrl.NewManager(restCfg, ctrlmanager.Options{
			Scheme:         cacheOpts.Scheme,
			Logger:         log,
			Cache:          cacheOpts,
			MapperProvider: func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return mapper, nil },
			// Informer requests wait out an API server outage instead of backing off (apihealth.go);
			// the cache's sync is waited for on the informers' channels (cachesync.go).
			NewCache: func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
				c, err := health.newCache(cfg, opts)
				if err != nil {
					return nil, err
				}
				return promptSync(c), nil
			},
			LeaderElection:                cfg.LeaderElect,
			LeaderElectionID:              cfg.ElectionID,
			LeaderElectionNamespace:       electionNS,
			LeaderElectionResourceLock:    "leases",
			LeaderElectionReleaseOnCancel: !opts.KeepLeaseOnCancel,
			LeaseDuration:                 &leaseDuration,
			RenewDeadline:                 &renewDeadline,
			RetryPeriod:                   &retryPeriod,
			Metrics:                       metricsserver.Options{BindAddress: cfg.MetricsBindAddress, FilterProvider: metricsFilter(cfg)},
			HealthProbeBindAddress:        cfg.HealthProbeBindAddress,
			GracefulShutdownTimeout:       &gracefulShutdown,
		})
		return err
	})
	return mgr, err
}

// kindsToRead asks API discovery which optional kinds are served, and at which version, and
// takes out those switched off by flags: the kinds the cache reads.
func kindsToRead(ctx context.Context, cfg *config.Config, restCfg *rest.Config, health *apiHealth, ep startEndpoints, log logr.Logger) (
	optional store.KindSet, versions store.Versions, off store.KindSet, readKinds store.KindSet, err error) {
	if err = health.startStep(ctx, ep, "API discovery of the optional kinds", func() (err error) {
		optional, versions, err = discoverOptionalKinds(restCfg)
		return err
	}); err != nil {
		return nil, nil, nil, nil, err
	}
	for _, k := range store.AllKinds() {
		if k.Optional() && !optional.Has(k) {
			log.Info("CRD not installed; kind skipped", "kind", k.String(), "group", k.GroupVersionKind().Group, "resource", k.Resource())
		}
	}
	for _, k := range optional.Sorted() {
		if v, older := versions[k]; older {
			log.Info("CRD serves an older version only; kind read at it, as KIC reads it", "kind", k.String(), "version", v)
		}
	}
	off = kindsSwitchedOff(cfg, log)
	readKinds = store.ReadKinds(optional)
	for k := range off {
		delete(optional, k)
		delete(readKinds, k)
	}
	return optional, versions, off, readKinds, nil
}

// statusWriters are the leader-only status writers --update-status asks for (added to mgr),
// as the reporters the sync loop tells.
func statusWriters(cfg *config.Config, st *store.Store, mgr ctrlmanager.Manager, barrier *dataplane.InformerBarrier, flavors *dataplane.RouterFlavors, log logr.Logger) (dataplane.Reporters, error) {
	var out dataplane.Reporters
	publish := status.IngressOptions{PublishAddresses: cfg.PublishAddresses, PublishService: cfg.PublishService,
		PublishAddressesUDP: cfg.PublishAddressesUDP, PublishServiceUDP: cfg.PublishServiceUDP}
	ingressStatus := status.NewIngressUpdater(publish,
		st, mgr.GetAPIReader(), mgr.GetClient(), log.WithName("ingress-status"))
	if cfg.UpdateStatus && ingressStatus.Enabled() {
		out = append(out, ingressStatus)
		if err := mgr.Add(ingressStatus); err != nil {
			return nil, err
		}
	}
	if cfg.UpdateStatus {
		gatewayStatus := status.NewGatewayAPIUpdater(cfg.GatewayAPIControllerName, publish, st, mgr.GetAPIReader(), mgr.GetClient(), log.WithName("gateway-api-status"))
		gatewayStatus.GatewayAlpha = cfg.FeatureGates.Enabled(config.GateGatewayAlpha)
		gatewayStatus.Listens = flavors.Listens
		gatewayStatus.Router = func() gatewayapi.Router { return gatewayapi.Router{Expressions: flavors.Expressions()} }
		out = append(out, gatewayStatus)
		// Gateway API events also wake the Gateways' status directly: attachedRoutes follows
		// the cache, not the sync loop.
		if err := barrier.AddEventHandler(gatewayStatus.EventHandler()); err != nil {
			return nil, err
		}
		if err := mgr.Add(gatewayStatus); err != nil {
			return nil, err
		}
		programmed := status.NewProgrammedUpdater(st, mgr.GetClient(), log.WithName("kong-status"))
		programmed.LicenseControllerName = status.LicenseControllerName(cfg.ElectionID)
		programmed.NoLicenses = cfg.Konnect.LicensingEnabled
		out = append(out, programmed)
		if err := mgr.Add(programmed); err != nil {
			return nil, err
		}
		upstreamPolicies := status.NewUpstreamPolicyUpdater(cfg.GatewayAPIControllerName, st, mgr.GetAPIReader(), mgr.GetClient(), log.WithName("upstream-policy-status"))
		out = append(out, upstreamPolicies)
		if err := mgr.Add(upstreamPolicies); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Start runs the controller until ctx ends. Without leader election it checks that no
// gateway has a database (RequireLeaderElection), while the cache syncs, and stops with that
// error if one has: the database-mode gateway refuses to write without leader election
// meanwhile (DBModeFactory).
func (c *Controller) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	refused := make(chan error, 1)
	go func() {
		if err := c.askGatewaysAtStart(ctx); err != nil {
			refused <- err
			cancel()
		}
	}()
	err := c.run(ctx)
	select {
	case r := <-refused:
		return r
	default:
		return err
	}
}

// askGatewaysAtStart is what Start asks the gateways while the cache syncs: whether one has
// a database though leader election is off (an error then), and what the first round needs.
func (c *Controller) askGatewaysAtStart(ctx context.Context) error {
	roots := c.askGateways(ctx)
	if c.election.GatewaysProbed {
		return nil
	}
	return RequireLeaderElection(c.cfg, func(url string) (dataplane.Root, error) {
		a, ok := roots[url]
		if !ok {
			return dataplane.Root{}, errors.New("not asked")
		}
		return a.root, a.err
	}, c.log)
}

// rootAnswer is a gateway's answer to GET /, or why there is none.
type rootAnswer struct {
	root dataplane.Root
	err  error
}

// askGateways asks the --kong-admin-url gateways, while the cache syncs, what the first round
// would otherwise ask them after it (issue #13: each GET / was a round trip on the path from
// start to first push), one GET / each (DetectingGateway.Detect, or the answer
// DecideLeaderElection got): their database mode and router, for their first Sync, and their
// edition, handed to GatewayFacts for the first round's translation. It returns the answers
// by URL. Failures are left for the first round to meet again. Only reads: every replica may
// ask, leader or not.
func (c *Controller) askGateways(ctx context.Context) map[string]rootAnswer {
	ctx, cancel := context.WithTimeout(ctx, startCheckTimeout)
	defer cancel()
	var mu sync.Mutex
	answers := map[string]rootAnswer{}
	var wg sync.WaitGroup
	for _, g := range c.gateways {
		if d, ok := g.(*dataplane.DetectingGateway); ok {
			wg.Go(func() {
				root, err := d.Detect(ctx)
				a := rootAnswer{err: err}
				switch {
				case root != nil:
					a.root = *root
					c.facts.RecordRoot(d.AdminRootURL(), *root)
				case err == nil:
					// Its first Sync came first and asked: its protocol says what it found.
					a.root.Database = d.Protocol() != dataplane.ProtocolDBLess
				}
				mu.Lock()
				answers[d.URL()] = a
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	return answers
}

// run starts the manager and returns when it stopped, or ShutdownGrace after ctx ended.
func (c *Controller) run(ctx context.Context) error {
	if c.webhook != nil && c.webhook.Certificates != nil {
		go func() {
			if err := c.webhook.Certificates.Start(ctx); err != nil {
				c.log.Error(err, "admission webhook: watching the certificate files failed; the last certificate read is served")
			}
		}()
	}
	c.barrier.Seal()
	done := make(chan error, 1)
	go func() { done <- c.mgr.Start(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	// controller-runtime v0.25's manager cannot stop while it waits for a cache that never
	// syncs (a kind RBAC forbids): its start loop keeps selecting a closed ctx.Done() without
	// returning. A shutdown then must not wait for it forever.
	select {
	case err := <-done:
		return err
	case <-time.After(ShutdownGrace):
		pending := strings.Join(c.barrier.Pending(), ", ")
		c.log.Error(nil, "manager did not stop in time; giving up on it", "grace", ShutdownGrace.String(), "cacheNotSynced", pending)
		return fmt.Errorf("shutdown: manager still waiting for caches (%s) after %s", pending, ShutdownGrace)
	}
}

// AdmissionWebhookAddr is the address the admission webhook listens on; nil when it is off.
func (c *Controller) AdmissionWebhookAddr() net.Addr {
	if c.webhook == nil {
		return nil
	}
	return c.webhook.Addr()
}

// admissionWebhook assembles the validating webhook (--admission-webhook-*): a validator over
// the store, told of every informer event, and its HTTPS server, which runs on every replica
// from the start (reviews before the cache synced are allowed with a warning). Plugins whose
// schema konductor does not know are checked by the gateways: the --kong-admin-url ones, or
// the discovered ones. It translates under the router flavor the sync loop translates under
// (flavors), so that it refuses the regexes a round would leave out.
func admissionWebhook(cfg *config.Config, st admission.SnapshotSource, barrier *dataplane.InformerBarrier, gateways []dataplane.Gateway,
	discovered dataplane.GatewaySet, flavors *dataplane.RouterFlavors, mgr ctrlmanager.Manager, log logr.Logger) (*admission.Server, error) {
	schemas, err := gatewaySchemas(cfg, gateways, discovered)
	if err != nil {
		return nil, err
	}
	v := admission.NewValidator(admission.Options{
		Source: st, Namespaces: cfg.WatchNamespaces, Synced: barrier.Synced,
		TranslatorOptions: func(now time.Time) translator.Options { return routerTranslatorOptions(cfg, flavors, discovered, now) },
		Gateways:          schemas, Logger: log,
	})
	if err := barrier.AddEventHandler(v.EventHandler()); err != nil {
		return nil, err
	}
	a := cfg.AdmissionWebhook
	srv, err := admission.NewServer(admission.ServerOptions{ListenAddr: a.ListenAddr, CertFile: a.CertFile, KeyFile: a.KeyFile, Cert: a.Cert, Key: a.Key,
		ClientCAFile: a.ClientCAFile}, admission.Handler(v, log))
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(srv.HTTP); err != nil {
		return nil, err
	}
	log.Info("admission webhook listening", "address", srv.Addr().String())
	return srv, nil
}

// gatewaySchemas are the Admin API clients the webhook asks about plugins it has no schema
// of: one per --kong-admin-url, or, with gateway discovery, one per discovered gateway at the
// time of the review (reached with the TLS server name of the first --kong-admin-svc).
func gatewaySchemas(cfg *config.Config, gateways []dataplane.Gateway, discovered dataplane.GatewaySet) (admission.KongGateways, error) {
	serverName := ""
	if cfg.Discovery() {
		svc := cfg.KongAdminSvc[0]
		serverName = fmt.Sprintf("pod.%s.%s.svc", svc.Name, svc.Namespace)
	}
	httpClient, err := adminHTTPClient(cfg, serverName)
	if err != nil {
		return nil, err
	}
	// Translation asks for the clients every round: one client per URL, made once.
	var mu sync.Mutex
	clients := map[string]*kong.Client{}
	return func() []*kong.Client {
		current := askableURLs(gateways, discovered)
		mu.Lock()
		defer mu.Unlock()
		out := make([]*kong.Client, 0, len(current))
		for _, url := range current {
			c, ok := clients[url]
			if !ok {
				var err error
				if c, err = kong.NewClient(kong.String(url), httpClient); err != nil {
					continue
				}
				clients[url] = c
			}
			out = append(out, c)
		}
		if len(clients) > len(out) { // discovered gateways that went away
			for url := range clients {
				if !slices.Contains(current, url) {
					delete(clients, url)
				}
			}
		}
		return out
	}, nil
}

// askableURLs are the gateways to ask about plugins, editions and schemas: the
// --kong-admin-url ones, or the discovered ones that can be asked now (on a standby, which
// configures none, those it learned the router of: discovery.Set.AskableURLs).
func askableURLs(gateways []dataplane.Gateway, discovered dataplane.GatewaySet) []string {
	if a, ok := discovered.(interface{ AskableURLs() []string }); ok {
		return a.AskableURLs()
	}
	if discovered != nil {
		gateways = discovered.Gateways()
	}
	out := make([]string, 0, len(gateways))
	for _, g := range gateways {
		out = append(out, g.URL())
	}
	return out
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

// TranslatorOptions are the translation settings of cfg. now is when CA certificates must be
// valid; the loop passes the time of each round, so that translation itself reads no clock.
func TranslatorOptions(cfg *config.Config, now time.Time) translator.Options {
	return translator.Options{
		ClusterDomain:                           cfg.ClusterDomain,
		GatewayControllerName:                   cfg.GatewayAPIControllerName,
		EnableDrainSupport:                      cfg.EnableDrainSupport,
		AllowLocalTargets:                       cfg.AllowLocalTargets,
		ExternalNameServices:                    cfg.ExternalNameServices,
		PluginsDenied:                           cfg.PluginsDenied,
		PluginsDeniedNamespaces:                 cfg.PluginsDeniedNamespaceSelector,
		HostOwnership:                           cfg.HostOwnership,
		AdminServices:                           cfg.KongAdminSvc,
		AdminHosts:                              adminHosts(cfg.KongAdminURLs),
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
	}
}

// routerTranslatorOptions are TranslatorOptions under the router the gateways said they have
// (flavors; before any said, the traditional router with PCRE's regexes): the settings of the
// sync loop's rounds and of the admission webhook's reviews, one source for both, so that the
// webhook refuses what a round would leave out (a regex Rust's crate refuses under
// traditional_compatible and expressions).
func routerTranslatorOptions(cfg *config.Config, flavors *dataplane.RouterFlavors, discovered dataplane.GatewaySet, now time.Time) translator.Options {
	opts := TranslatorOptions(cfg, now)
	// The discovered gateways' Admin API addresses are the Admin API too: an ExternalName of
	// one is refused as its Service's names are (a new set translates everything once).
	if discovered != nil {
		var urls []string
		for _, g := range discovered.Gateways() {
			urls = append(urls, g.URL())
		}
		opts.AdminHosts = adminHosts(append(slices.Clone(cfg.KongAdminURLs), urls...))
	}
	opts.ExpressionRoutes = flavors.Expressions()
	opts.RustRegexes = flavors.RustRegexes()
	// The oldest Kong version the gateways run: KIC's version-dependent rendering (the
	// redirect plugin from 3.9, sticky sessions from 3.11).
	opts.KongVersion = flavors.KongVersion()
	return opts
}

// gracefulShutdown is how long the manager gives its runnables to stop (the sync loop, then
// the lease release). ShutdownGrace, how long Start waits for the manager after ctx ends, is
// longer, so that a clean stop always releases the lease before the process exits.
var gracefulShutdown = 10 * time.Second

// ShutdownGrace bounds how long Start waits for the manager after ctx ends.
var ShutdownGrace = 15 * time.Second

// Elected is closed when this replica leads (at once without leader election).
func (c *Controller) Elected() <-chan struct{} { return c.mgr.Elected() }

// FirstSyncDone is closed after the first round that succeeded on every gateway.
func (c *Controller) FirstSyncDone() <-chan struct{} { return c.loop.FirstSyncDone() }

// CacheSynced reports whether every informer the store reads has synced: on a standby, that
// its cache is warm.
func (c *Controller) CacheSynced() bool { return c.barrier.Synced() }

// watchErrorRepeat is how long the same watch error of a kind stays unlogged after it was logged.
const watchErrorRepeat = 5 * time.Minute

// readiness: ready once the cache synced and, on the leader, once every gateway took the
// configuration (loopReady: at once after the first round when discovery has found none yet)
// and, with Konnect licensing (license not nil), once a license is held (KIC's leader is not
// ready without one). A standby is ready with a warm cache: it can take over at once.
func readiness(b *dataplane.InformerBarrier, elected <-chan struct{}, loopReady func() error, license func() *kong.License) healthz.Checker {
	return func(*http.Request) error {
		if !b.Synced() {
			return fmt.Errorf("cache not synced: waiting for %s", strings.Join(b.Pending(), ", "))
		}
		select {
		case <-elected:
		default:
			return nil
		}
		if err := loopReady(); err != nil {
			return fmt.Errorf("leader: %w", err)
		}
		if license != nil && license() == nil {
			return errors.New("leader: no Konnect license available")
		}
		return nil
	}
}

// watchErrorLogger names the kind whose list or watch fails, so that a missing RBAC
// permission is plain in the log while the first sync waits for it. The reflector retries
// with backoff; the same error for the same kind is logged again only after watchErrorRepeat,
// so a permission revoked again later is seen again.
func watchErrorLogger(log logr.Logger, failed func(kind string, err error)) toolscache.WatchErrorHandlerWithContext {
	type seen struct {
		msg string
		at  time.Time
	}
	var mu sync.Mutex
	last := map[string]seen{}
	return func(ctx context.Context, r *toolscache.Reflector, err error) {
		if ctx.Err() != nil || errors.Is(err, context.Canceled) {
			return // shutting down: not a permission or a server problem
		}
		kind := r.TypeDescription()
		failed(kind, err)
		now := time.Now()
		mu.Lock()
		prev := last[kind]
		repeated := prev.msg == err.Error() && now.Sub(prev.at) < watchErrorRepeat
		if !repeated {
			last[kind] = seen{err.Error(), now}
		}
		mu.Unlock()
		if repeated {
			return
		}
		msg := "cannot list/watch; the first sync waits until it can"
		switch {
		case apierrors.IsNotFound(err):
			msg = "cannot list/watch: the API server does not serve this kind (its CRD removed?); the kind is dropped once API discovery confirms, its objects are kept meanwhile"
		case strings.Contains(err.Error(), "forbidden"):
			msg = "RBAC forbids list/watch; grant the controller's ServiceAccount list and watch on this kind. The first sync waits until it can"
		}
		log.Error(err, msg, "kind", kind)
	}
}

func restConfig(kubeconfig, apiserverHost string) (*rest.Config, error) {
	return RestConfigInContext(kubeconfig, apiserverHost, "")
}

// RestConfigInContext is the controller's Kubernetes client configuration with the kubeconfig's
// context kubeContext ("": its current context), as kubectl's --context picks one (`kubectl
// konductor explain --context ...`).
func RestConfigInContext(kubeconfig, apiserverHost, kubeContext string) (*rest.Config, error) {
	if kubeconfig != "" {
		os.Setenv("KUBECONFIG", kubeconfig) //nolint:errcheck // read by GetConfigWithContext below
	}
	cfg, err := crconfig.GetConfigWithContext(kubeContext)
	switch {
	case err != nil && apiserverHost != "":
		// KIC's --apiserver-host alone (client-go's BuildConfigFromFlags): the URL, no
		// credentials.
		return &rest.Config{Host: apiserverHost}, nil
	case err != nil:
		return nil, fmt.Errorf("--kubeconfig: no Kubernetes configuration: %w", err)
	case apiserverHost != "":
		// The kubeconfig's (or the Pod's) credentials, at the URL given (--apiserver-host).
		cfg.Host = apiserverHost
	}
	return cfg, nil
}

const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// podNamespace is the controller's namespace: POD_NAMESPACE, else its service account's.
func podNamespace(pod config.Pod) string {
	if pod.Namespace != "" {
		return pod.Namespace
	}
	if b, err := os.ReadFile(serviceAccountNamespaceFile); err == nil {
		return strings.TrimSpace(string(b))
	}
	return ""
}

// podReference is the controller's own Pod, from the downward API (POD_NAME, POD_NAMESPACE),
// for the per-gateway events; nil outside a Pod.
func podReference(pod config.Pod) *corev1.ObjectReference {
	if pod.Name == "" || pod.Namespace == "" {
		return nil
	}
	return &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, Namespace: pod.Namespace, UID: types.UID(pod.UID)}
}

// instanceID is the value of KIC's instance_id metrics label: the controller's Pod name
// (POD_NAME), else the host name, which is the Pod name in a Pod too.
func instanceID(pod config.Pod) string {
	if pod.Name != "" {
		return pod.Name
	}
	name, _ := os.Hostname()
	return name
}

// buildGateways makes one Gateway per --kong-admin-url, each given its answer to GET / from
// roots when DecideLeaderElection asked it, so that it is not asked again.
func buildGateways(cfg *config.Config, dbMode dataplane.DBModeFactory, flavors *dataplane.RouterFlavors, roots map[string]dataplane.Root, log logr.Logger) ([]dataplane.Gateway, error) {
	httpClient, err := AdminHTTPClient(cfg)
	if err != nil {
		return nil, err
	}
	var out []dataplane.Gateway
	for _, u := range cfg.KongAdminURLs {
		c, err := kong.NewClient(kong.String(u), httpClient)
		if err != nil {
			return nil, fmt.Errorf("--kong-admin-url %q: %w", u, err)
		}
		g := dataplane.NewDetectingGateway(u, c, dbMode, log)
		g.Flavors = flavors
		g.DBLessRefused = dbLessRefused(cfg)
		if root, ok := roots[u]; ok {
			g.Answered(root)
		}
		out = append(out, g)
	}
	return out, nil
}

// gatewayDiscovery is the set of gateways discovered from --kong-admin-svc. It reads the
// EndpointSlices of the cache, whose informer the barrier waits for, and is told at once of a
// change to those of the admin Services.
func gatewayDiscovery(ctx context.Context, cfg *config.Config, c cache.Cache, dbMode dataplane.DBModeFactory, flavors *dataplane.RouterFlavors, log logr.Logger) (*gatewaydiscovery.Set, error) {
	if _, err := AdminHTTPClient(cfg); err != nil { // fail at start on bad TLS files
		return nil, err
	}
	set := gatewaydiscovery.New(gatewaydiscovery.Options{
		Reader: c, Services: cfg.KongAdminSvc, PortNames: cfg.KongAdminSvcPortNames, Flavors: flavors,
		HTTPClient: func(serverName string) (*http.Client, error) { return adminHTTPClient(cfg, serverName) },
		DBMode:     dbMode, DBLessRefused: dbLessRefused(cfg),
		Interval: cfg.DiscoveryReadinessCheckInterval, Timeout: cfg.DiscoveryReadinessCheckTimeout,
		Logger: log,
	})
	inf, err := c.GetInformer(ctx, &discoveryv1.EndpointSlice{}, cache.BlockUntilSynced(false))
	if err != nil {
		return nil, fmt.Errorf("registering the EndpointSlice informer for gateway discovery: %w", err)
	}
	kick := func(obj any) {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if es, ok := obj.(*discoveryv1.EndpointSlice); ok && set.Watches(es) {
			set.Kick()
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: kick, UpdateFunc: func(_, obj any) { kick(obj) }, DeleteFunc: kick,
	}); err != nil {
		return nil, err
	}
	return set, nil
}

// AdminHTTPClient is the HTTP client for the Admin API: TLS settings and the token header.
func AdminHTTPClient(cfg *config.Config) (*http.Client, error) { return adminHTTPClient(cfg, "") }

// adminHTTPClient is AdminHTTPClient with a TLS server name (a discovered gateway's, which
// wins over --kong-admin-tls-server-name as each discovered gateway has its own).
func adminHTTPClient(cfg *config.Config, serverName string) (*http.Client, error) {
	if serverName == "" {
		serverName = cfg.KongAdminTLSServerName
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.KongAdminTLSSkipVerify, ServerName: serverName} //nolint:gosec // the user asked for it
	caPEM, caFlag, err := pemOf(cfg.KongAdminCACert, "kong-admin-ca-cert", cfg.KongAdminCACertFile)
	if err != nil {
		return nil, err
	}
	if caPEM != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, fmt.Errorf("--%s: no PEM certificate", caFlag)
		}
		tlsCfg.RootCAs = pool
	}
	certPEM, certFlag, err := pemOf(cfg.KongAdminClientCertPEM, "kong-admin-tls-client-cert", cfg.KongAdminClientCert)
	if err != nil {
		return nil, err
	}
	keyPEM, _, err := pemOf(cfg.KongAdminClientKeyPEM, "kong-admin-tls-client-key", cfg.KongAdminClientKey)
	if err != nil {
		return nil, err
	}
	if certPEM != nil {
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", certFlag, err)
		}
		tlsCfg.Certificates = []tls.Certificate{pair}
	}
	token, err := cfg.AdminToken()
	if err != nil {
		return nil, err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsCfg
	transport.MaxIdleConnsPerHost = max(cfg.KongAdminConcurrency, 2)
	var rt http.RoundTripper = transport
	if token != "" {
		rt = tokenTransport{token: token, next: transport}
	}
	if len(cfg.KongAdminHeaders) > 0 {
		rt = headerTransport{headers: cfg.KongAdminHeaders, next: rt}
	}
	// A request that got no answer, a 5xx or a 429 is tried again when that is safe
	// (retryTransport), within the same bound.
	if len(cfg.KongAdminURLUsers) > 0 {
		rt = basicAuthTransport{users: cfg.KongAdminURLUsers, next: rt}
	}
	rt = newRetryTransport(rt)
	// An answer is read within a size, a listing within a number of pages: an endpoint that
	// is not Kong cannot make the controller read on (docs/security.md).
	rt = dataplane.BoundedAnswers(rt, dataplane.MaxAdminAnswerBytes, dataplane.MaxAdminPages)
	// Every request to the Admin API is bounded (--proxy-timeout-seconds, KIC's), retries
	// included: a gateway that stops answering fails the sync, which the loop retries with
	// backoff, instead of hanging it.
	timeout := cfg.ProxyTimeout
	if timeout <= 0 {
		timeout = config.DefaultProxyTimeoutSeconds * time.Second
	}
	return &http.Client{Transport: rt, Timeout: timeout, CheckRedirect: dataplane.RefuseRedirect}, nil
}

// basicAuthTransport sends the user:password@ of a --kong-admin-url (config.KongAdminURLUsers)
// to that gateway, and to no other.
type basicAuthTransport struct {
	users map[string]*url.Userinfo
	next  http.RoundTripper
}

func (t basicAuthTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if u := t.users[r.URL.Scheme+"://"+r.URL.Host]; u != nil {
		r = r.Clone(r.Context())
		pass, _ := u.Password()
		r.SetBasicAuth(u.Username(), pass)
	}
	return t.next.RoundTrip(r)
}

// pemOf is the PEM of a KIC flag given inline (--name) or as a file (--name-file, the
// path); nil when neither is set, and the name of the flag it came from.
func pemOf(inline, name, path string) ([]byte, string, error) {
	switch {
	case inline != "":
		return []byte(inline), name, nil
	case path != "":
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, name + "-file", fmt.Errorf("--%s-file: %w", name, err)
		}
		return b, name + "-file", nil
	}
	return nil, "", nil
}

// headerTransport sends --kong-admin-header's headers with every Admin API request.
type headerTransport struct {
	headers http.Header
	next    http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for name, values := range t.headers {
		r.Header[name] = append([]string(nil), values...)
	}
	return t.next.RoundTrip(r)
}

type tokenTransport struct {
	token string
	next  http.RoundTripper
}

func (t tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Kong-Admin-Token", t.token)
	return t.next.RoundTrip(r)
}

// profilingHandlers are net/http/pprof's endpoints under /debug/pprof/ when --profiling is set
// (KIC's flag), served on the diagnostics server (--diagnostic-server-port) as in KIC.
func profilingHandlers(on bool) map[string]http.Handler {
	if !on {
		return nil
	}
	return map[string]http.Handler{
		"/debug/pprof/":        http.HandlerFunc(pprof.Index),
		"/debug/pprof/cmdline": http.HandlerFunc(redactedCmdline),
		"/debug/pprof/profile": http.HandlerFunc(pprof.Profile),
		"/debug/pprof/symbol":  http.HandlerFunc(pprof.Symbol),
		"/debug/pprof/trace":   http.HandlerFunc(pprof.Trace),
	}
}

// redactedCmdline is pprof.Cmdline without the secrets the command line may hold (the
// Admin API token, inline keys, a user:password@ in a URL): /debug/pprof is served to anyone
// who reaches the diagnostics port (docs/security.md, item 3).
func redactedCmdline(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprint(w, strings.Join(RedactArgs(os.Args), "\x00"))
}

// secretFlag names the flags whose value is a secret (KIC's and konductor's: --kong-admin-token,
// --kong-admin-tls-client-key, --konnect-tls-client-key, ...).
var secretFlag = regexp.MustCompile(`(?i)(token|password|secret|-key)$`)

// RedactArgs is args with the values of secret flags and the passwords of URLs masked.
func RedactArgs(args []string) []string {
	out := make([]string, len(args))
	maskNext := false
	for i, a := range args {
		switch {
		case maskNext:
			a, maskNext = redact.Mask, false
		case strings.HasPrefix(a, "-"):
			name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if secretFlag.MatchString(name) {
				if hasValue {
					a = a[:strings.Index(a, "=")+1] + redact.Mask
				} else {
					maskNext = true
				}
			}
		}
		if p, err := url.Parse(a); err == nil && p.User != nil {
			a = p.Redacted()
		} else if eq := strings.Index(a, "="); eq >= 0 {
			for _, part := range strings.Split(a[eq+1:], ",") {
				if p, err := url.Parse(part); err == nil && p.User != nil {
					a = strings.Replace(a, part, p.Redacted(), 1)
				}
			}
		}
		out[i] = a
	}
	return out
}
