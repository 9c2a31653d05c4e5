package manager

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/kong/go-kong/kong"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmanager "sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/konductor/konductor/internal/admission"
	"github.com/konductor/konductor/internal/config"
	"github.com/konductor/konductor/internal/dataplane"
	gatewaydiscovery "github.com/konductor/konductor/internal/dataplane/discovery"
	"github.com/konductor/konductor/internal/diagnostics"
	"github.com/konductor/konductor/internal/status"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// New builds the controller. It waits for the Kubernetes API server to answer (apiwait.go),
// then talks to it (discovery) and, when leader election is left to it, asks each gateway
// GET / (DecideLeaderElection); it sends Kong no configuration. Its steps, in order: the API
// server, discovery of the kinds to read, leader election, the cache and the store, the
// gateways, the status writers and reporters, translation, the sync loop, and what is served
// beside it (webhook, probes).
func New(ctx context.Context, cfg *config.Config, opts Options) (*Controller, error) {
	log := opts.Logger
	// The steps of the start log their time since here at V(1) (docs/performance/journal.md, Start).
	started := time.Now()
	api, err := connect(ctx, cfg, opts, log)
	if err != nil {
		return nil, err
	}
	log.V(1).Info("start: API server answered", "sinceStart", time.Since(started).String())
	kinds, err := discoverKinds(ctx, cfg, api, log)
	if err != nil {
		return nil, err
	}
	log.V(1).Info("start: API discovery done", "sinceStart", time.Since(started).String())
	cfg, election, electionNS, err := decideElection(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	cs, err := cacheAndStore(ctx, cfg, opts, api, kinds, electionNS, log, started)
	if err != nil {
		return nil, err
	}
	gws, err := gatewaysOf(ctx, cfg, opts, cs, election, log)
	if err != nil {
		return nil, err
	}
	rep, err := reporters(cfg, opts, cs, gws, log)
	if err != nil {
		return nil, err
	}
	tr, err := translation(ctx, cfg, cs, gws, rep, kinds.versions, log)
	if err != nil {
		return nil, err
	}
	loop, err := syncLoop(ctx, cfg, opts, cs, gws, rep, tr, log)
	if err != nil {
		return nil, err
	}
	webhook, err := serveBeside(cfg, cs, gws, loop, rep, kinds, log)
	if err != nil {
		return nil, err
	}
	return &Controller{mgr: cs.mgr, webhook: webhook, barrier: cs.barrier, loop: loop, cfg: cfg, election: election, log: log,
		gateways: gws.static, facts: tr.facts, diag: tr.diag}, nil
}

// apiServer is the Kubernetes API server, answering: its client configuration and health.
type apiServer struct {
	restCfg *rest.Config
	health  *apiHealth
	ep      startEndpoints
}

// connect reads the client configuration and waits until the API server answers: one away at
// start is waited for, not a reason to exit (apiwait.go); so is one gone again at any later
// step that talks to it before the manager runs (startStep).
func connect(ctx context.Context, cfg *config.Config, opts Options, log logr.Logger) (*apiServer, error) {
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
	if cfg.PublishService == "" {
		// The Kong port behind a Gateway listener port is the publish Service's targetPort
		// (translation-rules.md §15.6): without it no HTTPRoute is held to its listeners' ports.
		log.Info("no --publish-service: under the expressions router HTTPRoutes attached to some of their Gateways' ports only are not held to those ports (the Kong port behind a Gateway port is not known)")
	}
	health, err := newAPIHealthFor(ctx, restCfg, log.WithName("kubernetes-api"))
	if err != nil {
		return nil, err
	}
	ep := startEndpoints{healthProbe: cfg.HealthProbeBindAddress, metrics: cfg.MetricsBindAddress}
	if err := health.waitUntilServing(ctx, ep); err != nil {
		return nil, fmt.Errorf("waiting for the Kubernetes API server: %w", err)
	}
	return &apiServer{restCfg: restCfg, health: health, ep: ep}, nil
}

// discoveredKinds are the kinds to read and the answers asked for with discovery.
type discoveredKinds struct {
	optional, off, read store.KindSet
	versions            store.Versions
	mapper              meta.RESTMapper
	// The answers asked for at once with discovery, which later steps take (or ask again):
	// the REST mapper's, the CRDs' list, the Kong kinds served.
	mapperAsked     <-chan error
	crdsAsked       chan crdsListing
	kongKindsServed chan []string
}

// discoverKinds sends discovery's requests, one per group version, all at once
// (startdiscovery.go), and with them the REST mapper's discovery and the CRDs' list, which
// need no answer of discovery's.
func discoverKinds(ctx context.Context, cfg *config.Config, api *apiServer, log logr.Logger) (*discoveredKinds, error) {
	d := &discoveredKinds{kongKindsServed: make(chan []string, 1), crdsAsked: make(chan crdsListing, 1)}
	go func() { d.kongKindsServed <- servedKongKinds(api.restCfg) }()
	var err error
	if d.mapper, err = restMapperFor(api.restCfg); err != nil {
		return nil, err
	}
	d.mapperAsked = askMapper(d.mapper)
	go func() {
		listable, err := mayListCRDs(ctx, api.restCfg, log.WithName("crds"))
		d.crdsAsked <- crdsListing{listable, err}
	}()
	if d.optional, d.versions, d.off, d.read, err = kindsToRead(ctx, cfg, api.restCfg, api.health, api.ep, log); err != nil {
		return nil, err
	}
	return d, nil
}

// decideElection decides leader election (DecideLeaderElection) and returns cfg with it
// decided, and the namespace of the lease.
func decideElection(ctx context.Context, cfg *config.Config, log logr.Logger) (*config.Config, LeaderElection, string, error) {
	election, err := DecideLeaderElection(ctx, cfg, log)
	if err != nil {
		return nil, election, "", err
	}
	log.Info("leader election decided", "enabled", election.Enabled, "reason", election.Reason)
	decided := *cfg
	decided.LeaderElect, decided.LeaderElectAuto = election.Enabled, false
	electionNS := decided.ElectionNamespace
	if decided.LeaderElect && electionNS == "" {
		if electionNS = podNamespace(decided.Pod); electionNS == "" {
			return nil, election, "", errors.New("--election-namespace: required when not running in a Pod (no POD_NAMESPACE and no service account namespace)")
		}
	}
	return &decided, election, electionNS, nil
}

// cacheParts are the manager with its cache, and the store and what follows the cache's
// events.
type cacheParts struct {
	mgr       ctrlmanager.Manager
	payloads  *store.SecretPayloads
	trigger   *dataplane.Trigger
	flavors   *dataplane.RouterFlavors
	barrier   *dataplane.InformerBarrier
	relevance *translator.Relevance
	st        *store.Store
	source    dataplane.SnapshotSource // what the loop's rounds read
}

// cacheAndStore constructs the manager and its cache, registers every informer before the
// manager starts (the cache then starts them on every replica, so a standby's cache is warm
// when it gains the lease: invariant 3), and makes the store and the event handling.
func cacheAndStore(ctx context.Context, cfg *config.Config, opts Options, api *apiServer, kinds *discoveredKinds, electionNS string,
	log logr.Logger, started time.Time) (*cacheParts, error) {
	// Secrets the translation does not refer to are cached without their data; the manager's
	// uncached reader loads one that becomes referenced (store.SecretPayloads).
	cp := &cacheParts{payloads: store.NewSecretPayloads(nil), trigger: dataplane.NewTrigger()}
	cp.payloads.SetConfigMapLabels(configMapLabels(cfg)...)
	// A list or watch failing with NotFound asks whether an optional kind's CRD is gone
	// (optionalKinds, made once the manager exists).
	var crds *optionalKinds
	cacheOpts := cacheOptions(cfg, cp.payloads, kinds.read, log, func(kind string, err error) {
		if crds != nil {
			crds.watchFailed(kind, err)
		}
	})
	crdsListable, err := askBeforeTheManager(ctx, api, kinds, log)
	if err != nil {
		return nil, err
	}
	if cp.mgr, err = newManager(ctx, cfg, api.restCfg, cacheOpts, kinds.mapper, electionNS, opts, api.health, api.ep, log); err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	log.V(1).Info("start: manager constructed", "sinceStart", time.Since(started).String())
	// What the gateways say of their router decides how routes are rendered; learning it
	// (or a change) asks for a new round.
	cp.flavors = dataplane.NewRouterFlavors(cp.trigger.Request)
	var objs []client.Object
	for _, k := range kinds.read.Sorted() {
		objs = append(objs, kinds.versions.NewObject(k))
	}
	if cp.barrier, err = dataplane.NewInformerBarrier(ctx, cp.mgr.GetCache(), objs...); err != nil {
		return nil, err
	}
	log.V(1).Info("start: informers registered", "sinceStart", time.Since(started).String())
	cp.barrier.LogEachSync(ctx, log.WithName("cache"), started)
	cp.relevance = &translator.Relevance{IngressClass: cfg.IngressClass}
	// CRDs installed or removed while the controller runs change the kinds the store reads.
	live := store.NewLiveKindsAt(kinds.optional, kinds.versions)
	// The store is made here so that the loop's snapshots can follow the events (the
	// Follower notes each changed object before the trigger wakes the round).
	cp.st = store.New(cp.mgr.GetCache(), store.Options{
		IngressClass: cfg.IngressClass, Namespaces: cfg.WatchNamespaces, Kinds: kinds.optional, Live: live,
		Off: kinds.off, Gateway: cfg.GatewayToReconcile,
	})
	follower := cp.st.Follow()
	// Every event is counted by kind and outcome, and a dropped one logged at V(1) with why
	// (docs/troubleshooting.md, "A change did not reach Kong").
	eventCounter := status.NewEventCounter(metrics.Registry, log.WithName("events"))
	if err := cp.barrier.AddEventHandler(follower.Recording(cp.trigger.JudgedEventHandler(cp.relevance, eventCounter))); err != nil {
		return nil, err
	}
	served, err := servedByDiscovery(api.restCfg)
	if err != nil {
		return nil, err
	}
	crds = newOptionalKinds(cp.mgr.GetCache(), cp.barrier, live, served, cp.trigger.Request, api.health, log.WithName("crds"))
	crds.ignore(kinds.off)
	if err := crds.watchCRDs(ctx, cp.mgr.GetCache(), crdsListable); err != nil {
		return nil, err
	}
	if err := cp.mgr.Add(crds); err != nil {
		return nil, err
	}
	cp.payloads.SetReader(cp.mgr.GetAPIReader())
	// The loop's rounds read what changed since the previous one (issue #13); everything
	// else reads the store.
	cp.source = cp.payloads.Source(follower)
	if opts.SnapshotSourceForTesting != nil {
		cp.source = opts.SnapshotSourceForTesting(cp.mgr.GetCache())
	}
	return cp, nil
}

// askBeforeTheManager takes the REST mappings of the kinds read, and whether CRDs may be
// listed, now, while an API server gone again can still be waited for with the probes served
// (the manager binds the probes' address when it is constructed); the informers registered
// after it then ask the API server nothing. It returns whether CRDs may be listed.
func askBeforeTheManager(ctx context.Context, api *apiServer, kinds *discoveredKinds, log logr.Logger) (bool, error) {
	mapperAsked, crdsAsked := kinds.mapperAsked, kinds.crdsAsked
	if err := api.health.startStep(ctx, api.ep, "REST mappings of the kinds read", func() error {
		if mapperAsked != nil { // the mapper's answer asked for with discovery, then anew
			err := <-mapperAsked
			mapperAsked = nil
			if err != nil {
				return err
			}
		}
		return mapKinds(kinds.mapper, kinds.read, kinds.versions)
	}); err != nil {
		return false, err
	}
	var crdsListable bool
	err := api.health.startStep(ctx, api.ep, "listing the CustomResourceDefinitions", func() (err error) {
		if crdsAsked != nil { // the answer asked for with discovery, then anew
			answer := <-crdsAsked
			crdsAsked = nil
			crdsListable, err = answer.listable, answer.err
			return err
		}
		crdsListable, err = mayListCRDs(ctx, api.restCfg, log.WithName("crds"))
		return err
	})
	return crdsListable, err
}

// gatewayParts are the gateways the loop configures: the --kong-admin-url ones (static), or
// the discovered ones (discovered, set).
type gatewayParts struct {
	dbMode       dataplane.DBModeFactory
	static       []dataplane.Gateway
	discovered   dataplane.GatewaySet
	set          *gatewaydiscovery.Set
	learnRouters func(context.Context) // a standby's
}

// gatewaysOf makes the gateways, from --kong-admin-url or by discovery (--kong-admin-svc).
func gatewaysOf(ctx context.Context, cfg *config.Config, opts Options, cs *cacheParts, election LeaderElection, log logr.Logger) (*gatewayParts, error) {
	g := &gatewayParts{dbMode: opts.DBMode}
	if g.dbMode == nil {
		g.dbMode = DBModeFactory(cfg, log)
	}
	var err error
	switch {
	case cfg.Discovery():
		if g.set, err = gatewayDiscovery(ctx, cfg, cs.mgr.GetCache(), g.dbMode, cs.flavors, log.WithName("discovery")); err != nil {
			return nil, err
		}
		g.discovered, g.learnRouters = g.set, g.set.LearnRouters
	default:
		if g.static, err = buildGateways(cfg, g.dbMode, cs.flavors, election.Roots, log); err != nil {
			return nil, err
		}
		g.learnRouters = staticRouterLearner(g.static, cs.flavors, log.WithName("standby"))
	}
	return g, nil
}

// reporterParts are what the sync loop reports its rounds to, with the Konnect parts.
type reporterParts struct {
	reporters dataplane.Reporters
	license   func() *kong.License // the Konnect license; nil without Konnect licensing
}

// reporters are the round's readers: the graph's followers, Events and metrics, Konnect, and
// the leader-only status writers (--update-status).
func reporters(cfg *config.Config, opts Options, cs *cacheParts, gws *gatewayParts, log logr.Logger) (*reporterParts, error) {
	out := dataplane.Reporters{graphFollowers{relevance: cs.relevance, payloads: cs.payloads}}
	var events record.EventRecorder = cs.mgr.GetEventRecorderFor("konductor") //nolint:staticcheck // core/v1 events keep every message (see status.Reporter)
	if !cfg.EmitKubernetesEvents {
		events = &record.FakeRecorder{} // KIC's --emit-kubernetes-events=false: a recorder that drops them
	}
	promMetrics := status.NewMetrics(metrics.Registry, instanceID(cfg.Pod))
	out = append(out, status.NewReporter(events, promMetrics, podReference(cfg.Pod), log))
	var podOf podLookup
	if gws.set != nil {
		podOf = gws.set.PodOf
	}
	konnectParts, err := setupKonnect(cfg, opts.Version, opts.KonnectRootCAs, cs.mgr, cs.flavors, podOf, cs.trigger.Request, promMetrics, log)
	if err != nil {
		return nil, err
	}
	out = append(out, konnectParts.reporters...)
	mgr := cs.mgr
	status.RegisterControllerState(metrics.Registry, cs.barrier.Synced, func() bool {
		select {
		case <-mgr.Elected():
			return true
		default:
			return false
		}
	})
	writers, err := statusWriters(cfg, cs.st, cs.payloads, mgr, cs.barrier, cs.flavors, log)
	if err != nil {
		return nil, err
	}
	return &reporterParts{reporters: append(out, writers...), license: konnectParts.license}, nil
}

// translationParts are how rounds translate: their options, the translation the standby and
// then the leader share, and the diagnostics server that reads it.
type translationParts struct {
	options      func(*store.Snapshot) translator.Options
	shared       *handover
	facts        *dataplane.GatewayFacts
	syncProtocol func() string // a standby's: what its gateways are sent
	diag         *diagnostics.Server
}

// translation makes the rounds' translation: what the gateways are asked (whether they are
// Kong Enterprise, for KongLicense, and the schemas of custom entity types, once, as
// translation needs them), the options (TranslationOptions), and one incremental translation
// and one renderer for the standby and then the leader (handover.go: the new leader's first
// round starts from the standby's last).
func translation(ctx context.Context, cfg *config.Config, cs *cacheParts, gws *gatewayParts, rep *reporterParts, versions store.Versions,
	log logr.Logger) (*translationParts, error) {
	gatewayClients, err := gatewaySchemas(cfg, gws.static, gws.discovered)
	if err != nil {
		return nil, err
	}
	tp := &translationParts{facts: dataplane.NewGatewayFacts(gatewayClients)}
	if gws.set != nil {
		// The set's GET / of each discovered gateway also tells facts its edition.
		gws.set.ShareRootsWith(tp.facts)
		tp.syncProtocol = gws.set.SyncProtocol
	}
	tp.options = func(s *store.Snapshot) translator.Options {
		return TranslationOptions(context.Background(), cfg, Gateways{Flavors: cs.flavors, Facts: tp.facts, License: rep.license, Discovered: gws.discovered}, s, time.Now())
	}
	reads := newReadsRecord()
	tp.shared = &handover{options: tp.options, reads: reads,
		around: func(s *store.Snapshot, build func(*store.Snapshot) translator.Result) translator.Result {
			return translateWithPayloads(ctx, cs.payloads, s, build, log)
		}}
	graph := graphDebugger{cache: cs.mgr.GetCache(), versions: versions, relevance: cs.relevance, payloads: cs.payloads, reads: reads}
	if tp.diag, err = diagnosticsServer(cfg, cs.mgr, graph.answer, log); err != nil {
		return nil, err
	}
	return tp, nil
}

// syncLoop makes the sync loop, the status writers' gate on its syncs, and a standby's
// preparation of its first sync.
func syncLoop(ctx context.Context, cfg *config.Config, opts Options, cs *cacheParts, gws *gatewayParts, rep *reporterParts, tr *translationParts,
	log logr.Logger) (*dataplane.Loop, error) {
	loopOpts := dataplane.Options{
		Source:  cs.source,
		Barrier: cs.barrier,
		Translate: func(s *store.Snapshot) translator.Result {
			opts := tr.options(s)
			return translateWithPayloads(ctx, cs.payloads, s, func(s *store.Snapshot) translator.Result { return translator.Build(s, opts) }, log)
		},
		Fallback:                      cfg.FeatureGates.Enabled(config.GateFallbackConfiguration),
		UseLastValidConfigForFallback: cfg.UseLastValidConfigForFallback,
		Gateways:                      gws.static,
		Discovery:                     gws.discovered,
		Trigger:                       cs.trigger,
		Reporter:                      rep.reporters,
		Logger:                        log.WithName("sync"),
		Period:                        cfg.ProxySyncPeriod,
		CacheSyncTimeout:              cfg.CacheSyncTimeout,
		ReverseSync:                   cfg.EnableReverseSync,
		Quiet:                         opts.Quiet,

		SkipCacheBarrierForTesting: opts.SkipCacheBarrierForTesting,
	}
	// Rounds translate what changed since the previous one (issue #13).
	tr.shared.loopRounds(&loopOpts, log)
	if tr.diag != nil {
		loopOpts.Diagnostics = tr.diag.Diagnostics() // a nil interface without --dump-config
	}
	loop := dataplane.NewLoop(loopOpts)
	if err := cs.mgr.Add(loop); err != nil {
		return nil, err
	}
	// A fresh leader writes every Ingress's status while changes are made, a route change
	// writes Gateways and routes: every status writer's writes wait for the syncs (issue #13).
	for _, r := range rep.reporters {
		if w, ok := r.(status.GatedWriter); ok {
			w.WaitForSyncs(loop.SyncGate())
		}
	}
	if cfg.LeaderElect && (len(gws.static) > 0 || gws.discovered != nil) && opts.SnapshotSourceForTesting == nil {
		// A standby prepares its first sync to database-backed gateways (discovered ones
		// are not: their set is the leader's to follow; it learns their router and keeps
		// its translation warm). Not in the control test of the
		// pre-konductor design (SnapshotSourceForTesting), which had no standby work: its
		// store starts filling at its first read, which must be the new leader's.
		// It translates with the loop's incremental translator and renderer, which the loop
		// takes over when this replica leads (handover.go).
		if err := cs.mgr.Add(&standbyPreparer{elected: cs.mgr.Elected(), barrier: cs.barrier, source: cs.source, shared: tr.shared,
			gateways: gws.static, learnRouters: gws.learnRouters, syncProtocol: tr.syncProtocol, diffStarting: loop.DiffStarting,
			period: cfg.ProxySyncPeriod, log: log.WithName("standby")}); err != nil {
			return nil, err
		}
	}
	return loop, nil
}

// serveBeside adds what is served beside the loop: the admission webhook (nil when it is
// off), the probes, and the start's last log lines.
func serveBeside(cfg *config.Config, cs *cacheParts, gws *gatewayParts, loop *dataplane.Loop, rep *reporterParts, kinds *discoveredKinds,
	log logr.Logger) (*admission.Server, error) {
	var webhook *admission.Server
	if cfg.AdmissionWebhook.Enabled() {
		// The webhook sees a Secret the cache keeps without its data as absent (it then warns
		// that the Secret is awaited), never as empty.
		var err error
		if webhook, err = admissionWebhook(cfg, cs.payloads.Source(cs.st), cs.barrier, gws.static, gws.discovered, cs.flavors, cs.mgr, log.WithName("admission")); err != nil {
			return nil, err
		}
	}
	if err := cs.mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := cs.mgr.AddReadyzCheck("sync", readiness(cs.barrier, cs.mgr.Elected(), loop.Ready, rep.license)); err != nil {
		return nil, err
	}
	gatewaysLog := any(cfg.KongAdminURLs)
	if cfg.Discovery() {
		gatewaysLog = fmt.Sprintf("discovered from %v, ports %v", cfg.KongAdminSvc, cfg.KongAdminSvcPortNames)
	}
	// Asked with discovery for this line only: its answer (two round trips in a row, which
	// used to hold up the start by 10-20 ms) is logged when it comes.
	go func() {
		if untranslated := untranslatedKongKinds(<-kinds.kongKindsServed, kinds.read, kinds.off); len(untranslated) > 0 {
			log.Info("Kong CRDs installed whose objects konductor does not translate yet; in DB-less mode what KIC made of such objects does not survive the switch (docs/migration-from-kic.md)",
				"kinds", strings.Join(untranslated, ","))
		}
	}()
	log.Info("controller assembled", "kinds", kinds.read.String(), "gateways", gatewaysLog,
		"ingressClass", cfg.IngressClass, "leaderElection", cfg.LeaderElect)
	return webhook, nil
}
