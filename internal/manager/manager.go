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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crconfig "sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmanager "sigs.k8s.io/controller-runtime/pkg/manager"
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
	diag     *diagnostics.Server // nil without --dump-config and --profiling
}

// diagnosticsServer is KIC's diagnostics server, added to mgr: --dump-config's dumps and
// --profiling's pprof, on --diagnostic-server-port as in KIC, and konductor's /debug/graph
// (graph); nil without --dump-config or --profiling.
func diagnosticsServer(cfg *config.Config, mgr ctrlmanager.Manager, graph func(*http.Request, string, string, string) (any, error), log logr.Logger) (*diagnostics.Server, error) {
	if !cfg.DumpConfig && !cfg.Profiling {
		return nil, nil
	}
	diag := diagnostics.New(diagnostics.Options{
		Port: cfg.DiagnosticServerPort, DumpConfig: cfg.DumpConfig, DumpSensitiveConfig: cfg.DumpSensitiveConfig,
		Profiling: profilingHandlers(cfg.Profiling), Graph: graph, Logger: log.WithName("diagnostics"),
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
		f.payloads.SetReferenced(payloadReferenced(r.Graph))
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
	var forbidden store.KindSet
	if err = health.startStep(ctx, ep, "RBAC of the kinds KIC does not read", func() (err error) {
		forbidden, err = kindsForbiddenByRBAC(ctx, restCfg, cfg, optional, versions, log)
		return err
	}); err != nil {
		return nil, nil, nil, nil, err
	}
	for k := range forbidden {
		off[k] = struct{}{}
	}
	readKinds = store.ReadKinds(optional)
	for k := range off {
		delete(optional, k)
		delete(readKinds, k)
	}
	return optional, versions, off, readKinds, nil
}

// statusWriters are the leader-only status writers --update-status asks for (added to mgr),
// as the reporters the sync loop tells.
func statusWriters(cfg *config.Config, st *store.Store, payloads *store.SecretPayloads, mgr ctrlmanager.Manager, barrier *dataplane.InformerBarrier, flavors *dataplane.RouterFlavors, log logr.Logger) (dataplane.Reporters, error) {
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
		gatewayStatus.Payloads = payloads
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

// DiagnosticsAddr is the address the diagnostics server listens on; nil when it is off or
// not listening yet.
func (c *Controller) DiagnosticsAddr() net.Addr {
	if c.diag == nil {
		return nil
	}
	return c.diag.Addr()
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
		TranslatorOptions: func(now time.Time) translator.Options {
			return TranslationOptions(context.Background(), cfg, Gateways{Flavors: flavors, Discovered: discovered}, nil, now)
		},
		Gateways: schemas, Logger: log,
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

// FirstDiffStarted is closed when a first sync by diff (database mode) is about to start
// (dataplane.Loop.FirstDiffStarted); never with DB-less gateways only.
func (c *Controller) FirstDiffStarted() <-chan struct{} { return c.loop.FirstDiffStarted() }

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
