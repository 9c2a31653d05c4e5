package discovery

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/kong/go-kong/kong"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/dataplane"
)

// Options configures a Set.
type Options struct {
	// Reader reads EndpointSlices: the manager's cache, whose EndpointSlice informer the
	// cache barrier waits for.
	Reader client.Reader
	// Services are the Admin API Services (--kong-admin-svc).
	Services []types.NamespacedName
	// PortNames are the names of their ports whose endpoints are gateways
	// (--kong-admin-svc-port-names).
	PortNames []string
	// HTTPClient returns the client that reaches an Admin API whose TLS server name is
	// serverName: the --kong-admin-* TLS settings and token, for every gateway.
	HTTPClient func(serverName string) (*http.Client, error)
	// DBMode builds the gateway of a Kong with a database.
	DBMode dataplane.DBModeFactory
	// DBLessRefused, when set, is noted for a DB-less Kong instead of syncing it
	// (dataplane.DetectingGateway.DBLessRefused).
	DBLessRefused error
	// Interval is how often every gateway is checked (--gateway-discovery-readiness-check-
	// interval); Timeout bounds one check (-timeout). A change of the EndpointSlices checks
	// the new gateways at once.
	Interval, Timeout time.Duration
	Logger            logr.Logger
	// Flavors, when set, is told each gateway's router flavor.
	Flavors *dataplane.RouterFlavors
}

// Set is the set of discovered gateways: a dataplane.GatewaySet.
//
// A discovered Admin API is pending until it answers GET / (which also tells its database
// mode), then ready until a GET /status fails (checked every Interval). Gateways() offers the
// ready ones: all of them when they are DB-less; when they share a database, one writer, the
// same one for as long as it stays ready, then the first ready one by URL.
type Set struct {
	opts  Options
	ports map[string]bool
	kick  *dataplane.Trigger

	members map[string]*member // owned by Run
	writer  string             // URL of the database writer, "" when none

	mu        sync.Mutex
	published []dataplane.Gateway
	pods      map[string]types.NamespacedName // the ready Admin APIs' Pods, by URL

	routers routerLearner // LearnRouters' own record
	running atomic.Bool   // Run started: this replica's loop runs the set
	// facts, when set, is given every answer to GET / (ShareRootsWith).
	facts *dataplane.GatewayFacts
}

// routerLearner is what LearnRouters keeps between calls: what each discovered Admin API
// answered to GET / (its router, its database mode), and a client per Admin API not answered
// yet. mu is held to read and to merge, never across a request.
type routerLearner struct {
	mu      sync.Mutex
	roots   map[string]podRoot
	clients map[string]*kong.Client
}

// podRoot is a discovered Admin API's answer to GET /, and the Pod that gave it.
type podRoot struct {
	dataplane.Root
	pod types.NamespacedName
}

type member struct {
	api     AdminAPI
	client  *kong.Client
	http    *http.Client
	gw      dataplane.Gateway // built once its database mode (and router) is known
	db      bool
	router  string // its router flavor, which a DB-less gateway checks targets against
	version string // its Kong version, likewise (refusedByRouter)
	// bodyLimit is its Admin API body limit (a larger body is not sent to a DB-less one).
	bodyLimit int64
	ready     bool
	err       string // the last check's error, logged when it changes
}

var _ dataplane.GatewaySet = (*Set)(nil)

// New returns a Set; Run keeps it current.
func New(opts Options) *Set {
	s := &Set{opts: opts, ports: map[string]bool{}, kick: dataplane.NewTrigger(), members: map[string]*member{},
		routers: routerLearner{roots: map[string]podRoot{}, clients: map[string]*kong.Client{}}}
	for _, p := range opts.PortNames {
		s.ports[p] = true
	}
	return s
}

// Kick asks for the EndpointSlices to be read again now (one of them changed).
func (s *Set) Kick() { s.kick.Request() }

// Watches reports whether an EndpointSlice belongs to one of the Services (for event
// filtering).
func (s *Set) Watches(es *discoveryv1.EndpointSlice) bool {
	for _, svc := range s.opts.Services {
		if es.Namespace == svc.Namespace && es.Labels[discoveryv1.LabelServiceName] == svc.Name {
			return true
		}
	}
	return false
}

// Gateways implements dataplane.GatewaySet.
func (s *Set) Gateways() []dataplane.Gateway {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.published)
}

// AskableURLs are the discovered Admin APIs to ask what translation needs of the gateways
// (their edition, the schemas of custom entities and of plugins the webhook does not know):
// the published gateways once Run runs (the leader's set), else those LearnRouters heard from
// (a standby, which publishes none), so that a standby's translation and webhook learn those
// facts as the leader's do. Sorted.
func (s *Set) AskableURLs() []string {
	var out []string
	if s.running.Load() {
		for _, g := range s.Gateways() {
			out = append(out, g.URL())
		}
	} else {
		s.routers.mu.Lock()
		for url := range s.routers.roots {
			out = append(out, url)
		}
		s.routers.mu.Unlock()
	}
	slices.Sort(out)
	return out
}

// ShareRootsWith has the set give facts every answer of a discovered gateway to GET /
// (LearnRouters', the readiness check's), so that facts learns the gateway's edition from it
// instead of asking GET / again. Call it before Run and LearnRouters.
func (s *Set) ShareRootsWith(facts *dataplane.GatewayFacts) { s.facts = facts }

// SyncProtocol is, on a standby, how the leader syncs the gateways LearnRouters heard from:
// dataplane.ProtocolDeck when one has a database (those with one are the gateways the leader
// configures when they disagree, publish), dataplane.ProtocolDBLess when they are DB-less,
// "" before any answered. A standby renders each period what that protocol sends, for the
// loop to take over, and only that: a DB-less /config body for gateways with a database would
// be megabytes kept for nothing.
func (s *Set) SyncProtocol() string {
	s.routers.mu.Lock()
	defer s.routers.mu.Unlock()
	for _, root := range s.routers.roots {
		if root.Database {
			return dataplane.ProtocolDeck
		}
	}
	if len(s.routers.roots) == 0 {
		return ""
	}
	return dataplane.ProtocolDBLess
}

// Run implements dataplane.GatewaySet.
func (s *Set) Run(ctx context.Context, changed func()) {
	s.running.Store(true)
	ticker := time.NewTicker(s.opts.Interval)
	defer ticker.Stop()
	s.refresh(ctx, true)
	changed()
	for {
		full := false
		select {
		case <-ctx.Done():
			return
		case <-s.kick.C():
		case <-ticker.C:
			full = true
		}
		if s.refresh(ctx, full) {
			changed()
		}
	}
}

// refresh reads the EndpointSlices, checks the pending gateways (and, when full, the ready
// ones), and publishes the result; it reports whether the published set changed.
func (s *Set) refresh(ctx context.Context, full bool) bool {
	log := s.opts.Logger
	apis, err := s.list(ctx)
	if err != nil {
		if ctx.Err() == nil {
			log.Error(err, "reading the admin Service's EndpointSlices; keeping the gateways known")
		}
		return false
	}
	found := map[string]bool{}
	for _, api := range apis {
		found[api.URL] = true
		if m, ok := s.members[api.URL]; ok {
			if m.api.Pod == api.Pod {
				continue
			}
			// Another Pod on the same address (a hostNetwork Kong replaced on its node): a
			// new gateway, empty until configured, maybe with another router or database
			// mode. The old one's member would keep its answers and its last push.
			delete(s.members, api.URL)
			log.Info("gateway's Pod replaced on the same address", "gateway", api.URL, "pod", api.Pod.String(), "was", m.api.Pod.String())
		}
		hc, err := s.opts.HTTPClient(api.ServerName)
		if err != nil {
			log.Error(err, "no Admin API client for a discovered gateway", "gateway", api.URL)
			continue
		}
		c, err := kong.NewClient(kong.String(api.URL), hc)
		if err != nil {
			log.Error(err, "no Admin API client for a discovered gateway", "gateway", api.URL)
			continue
		}
		s.members[api.URL] = &member{api: api, client: c, http: hc}
		log.Info("gateway discovered", "gateway", api.URL, "pod", api.Pod.String(), "serverName", api.ServerName)
	}
	for url, m := range s.members {
		if !found[url] {
			delete(s.members, url)
			log.Info("gateway no longer discovered", "gateway", url, "pod", m.api.Pod.String())
		}
	}
	s.opts.Flavors.KeepOnly(found)

	var wg sync.WaitGroup
	for _, m := range s.members {
		if m.ready && !full {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.check(ctx, m)
		}()
	}
	wg.Wait()
	return s.publish()
}

// LearnRouters tells Flavors the router of every discovered gateway, as Run does, without
// Run's readiness checks and without publishing gateways: it is how a standby replica, which
// does not run the set (the leader's loop does), knows the router flavor the leader translates
// for, for its warm translation and its admission webhook (KIC reads it on every replica at
// start, from the GET / of the Admin APIs it discovers). It only reads: the EndpointSlices from
// the cache, and GET / of each Admin API until it answered once; the Admin APIs no longer
// discovered are forgotten. Not to be called concurrently with itself.
func (s *Set) LearnRouters(ctx context.Context) {
	apis, err := s.list(ctx)
	if err != nil {
		return // the next call reads again; Run logs the failures that matter to the leader
	}
	found := map[string]bool{}
	asks, pods := s.routerAsks(apis, found)
	s.opts.Flavors.KeepOnly(found)
	// Asked without the lock: AskableURLs (the admission webhook's reviews) does not wait
	// for a gateway slow to answer.
	learned := s.opts.Flavors.Learn(ctx, s.opts.Timeout, asks)

	l := &s.routers
	l.mu.Lock()
	defer l.mu.Unlock()
	for url, root := range learned {
		l.roots[url] = podRoot{root, pods[url]}
		delete(l.clients, url)
		s.opts.Logger.Info("router flavor learned from a discovered gateway", "gateway", url, "routerFlavor", root.RouterFlavor, "database", root.Database)
	}
	maps.DeleteFunc(l.roots, func(url string, _ podRoot) bool { return !found[url] })
	maps.DeleteFunc(l.clients, func(url string, _ *kong.Client) bool { return !found[url] })
}

// routerAsks are LearnRouters' questions: GET / of each of apis not heard from yet, with the
// client made for it the first time, and the Pod each is asked of. found is told every URL of
// apis. An address whose Pod is not the one that answered (a hostNetwork Kong replaced on
// the node's address) is asked again, its old answer forgotten: the new Pod may run another
// router or database mode.
func (s *Set) routerAsks(apis []AdminAPI, found map[string]bool) (map[string]dataplane.RouterAsk, map[string]types.NamespacedName) {
	l := &s.routers
	l.mu.Lock()
	defer l.mu.Unlock()
	asks, pods := map[string]dataplane.RouterAsk{}, map[string]types.NamespacedName{}
	for _, api := range apis {
		found[api.URL] = true
		if known, ok := l.roots[api.URL]; ok {
			if known.pod == api.Pod {
				continue
			}
			delete(l.roots, api.URL)
		}
		c := l.clients[api.URL]
		if c == nil {
			var err error
			if c, err = s.client(api); err != nil {
				continue
			}
			l.clients[api.URL] = c
		}
		pods[api.URL] = api.Pod
		asks[api.URL] = func(ctx context.Context) (*dataplane.Root, error) {
			root, err := dataplane.ReadRoot(ctx, c)
			if err != nil {
				s.opts.Logger.V(1).Info("discovered gateway did not say its router yet", "gateway", api.URL, "error", err.Error())
				return nil, err
			}
			s.facts.RecordRoot(c.BaseRootURL(), root)
			return &root, nil
		}
	}
	return asks, pods
}

// client is the Admin API client of api.
func (s *Set) client(api AdminAPI) (*kong.Client, error) {
	hc, err := s.opts.HTTPClient(api.ServerName)
	if err != nil {
		return nil, err
	}
	return kong.NewClient(kong.String(api.URL), hc)
}

func (s *Set) list(ctx context.Context) ([]AdminAPI, error) {
	var out []AdminAPI
	for _, svc := range s.opts.Services {
		var list discoveryv1.EndpointSliceList
		if err := s.opts.Reader.List(ctx, &list, client.InNamespace(svc.Namespace),
			client.MatchingLabels{discoveryv1.LabelServiceName: svc.Name}); err != nil {
			return nil, fmt.Errorf("listing EndpointSlices of %s: %w", svc, err)
		}
		out = append(out, AdminAPIs(list.Items, svc, s.ports)...)
	}
	slices.SortFunc(out, func(a, b AdminAPI) int { return compare(a.URL, b.URL) })
	return slices.CompactFunc(out, func(a, b AdminAPI) bool { return a.URL == b.URL }), nil
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// check moves m between pending and ready: a pending gateway is ready once it answers GET /
// (KIC creates its client then, with the same request); a ready one is pending again when
// GET /status fails.
func (s *Set) check(ctx context.Context, m *member) {
	cctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	var err error
	if m.ready {
		if _, err = m.client.Status(cctx); err == nil {
			s.note(m, nil)
			return
		}
		m.ready = false
		s.note(m, fmt.Errorf("readiness check (GET /status): %w", err))
		return
	}
	root, err := dataplane.ReadRoot(cctx, m.client)
	if err != nil {
		s.note(m, err)
		return
	}
	s.facts.RecordRoot(m.client.BaseRootURL(), root)
	db := root.Database
	s.opts.Flavors.ReportRoot(m.api.URL, root)
	if m.gw == nil || m.db != db || !db && (m.router != root.RouterFlavor || m.version != root.Version || m.bodyLimit != root.BodyLimit) {
		m.db, m.router, m.version, m.bodyLimit = db, root.RouterFlavor, root.Version, root.BodyLimit
		if !db && s.opts.DBLessRefused != nil {
			s.note(m, s.opts.DBLessRefused)
			return
		} else if !db {
			m.gw = dataplane.NewDBLessGatewayOf(m.api.URL, m.client, s.opts.Logger, root)
		} else if s.opts.DBMode == nil {
			s.note(m, errors.New("gateway has a database, which this build cannot sync"))
			return
		} else if m.gw, err = s.opts.DBMode(m.api.URL, m.http); err != nil {
			s.note(m, err)
			return
		}
	}
	m.ready = true
	s.note(m, nil)
}

// note logs a gateway's check result when it differs from the last one.
func (s *Set) note(m *member, err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg == m.err {
		return
	}
	m.err = msg
	if err != nil {
		s.opts.Logger.Info("discovered gateway not ready", "gateway", m.api.URL, "error", msg)
		return
	}
	s.opts.Logger.Info("discovered gateway ready", "gateway", m.api.URL, "database", m.db)
}

// publish computes the gateways to configure from the ready members and reports whether they
// changed.
func (s *Set) publish() bool {
	var ready, withDB []*member
	for _, m := range s.members {
		if !m.ready {
			continue
		}
		ready = append(ready, m)
		if m.db {
			withDB = append(withDB, m)
		}
	}
	byURL := func(a, b *member) int { return compare(a.api.URL, b.api.URL) }
	slices.SortFunc(ready, byURL)
	slices.SortFunc(withDB, byURL)

	var next []dataplane.Gateway
	if len(withDB) > 0 {
		// They share one database: one of them gets the writes (KIC sends to one too). The
		// writer stays while it is ready, so that no configuration is written twice.
		if len(withDB) < len(ready) {
			s.opts.Logger.Error(nil, "discovered gateways disagree on the database; only those with one are configured",
				"withDatabase", len(withDB), "dbless", len(ready)-len(withDB))
		}
		w := s.members[s.writer]
		if w == nil || !w.ready || !w.db {
			w = withDB[0]
			s.opts.Logger.Info("database writer chosen among the discovered gateways", "gateway", w.api.URL, "previous", s.writer)
			s.writer = w.api.URL
		}
		next = []dataplane.Gateway{w.gw}
	} else {
		s.writer = ""
		for _, m := range ready {
			next = append(next, m.gw)
		}
	}

	pods := make(map[string]types.NamespacedName, len(ready))
	for _, m := range ready {
		pods[m.api.URL] = m.api.Pod
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods = pods
	if slices.Equal(next, s.published) {
		return false
	}
	s.published = next
	return true
}

// PodOf is the Pod of the ready Admin API at url (Konnect names a discovered gateway's node
// after it, as KIC does).
func (s *Set) PodOf(url string) (types.NamespacedName, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pod, ok := s.pods[url]
	return pod, ok
}
