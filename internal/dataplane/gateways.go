package dataplane

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/blang/semver/v4"
	"github.com/go-logr/logr"
	"github.com/kong/go-kong/kong"

	"github.com/konductor/konductor/internal/dataplane/dbless"
	"github.com/konductor/konductor/internal/gatewayapi"
	"github.com/konductor/konductor/internal/kongrules"
	"github.com/konductor/konductor/internal/kongstate"
)

// DBLessGateway syncs a DB-less Kong through POST /config.
type DBLessGateway struct {
	url string
	gw  *dbless.Gateway
	log logr.Logger
	// Router is the gateway's router flavor when known (a discovered gateway's, from its
	// GET /): a target its router refuses (refusedByRouter) is then not sent; the round its
	// answer asked for (RouterFlavors) renders one it takes. Version is its Kong version,
	// from the same answer ("" when unknown).
	Router, Version string
}

// NewDBLessGateway returns a Gateway for the DB-less Kong at url.
func NewDBLessGateway(url string, client *kong.Client, log logr.Logger) *DBLessGateway {
	return &DBLessGateway{url: url, gw: dbless.New(client), log: log}
}

// NewDBLessGatewayOf is NewDBLessGateway of a Kong whose GET / answered root: its router,
// version and Admin API body limit are known (a body over the limit is not sent).
func NewDBLessGatewayOf(url string, client *kong.Client, log logr.Logger, root Root) *DBLessGateway {
	g := NewDBLessGateway(url, client, log)
	g.Router, g.Version = root.RouterFlavor, root.Version
	g.gw.SetBodyLimit(root.BodyLimit)
	return g
}

// URL implements Gateway.
func (g *DBLessGateway) URL() string { return g.url }

// Protocol implements ProtocolNamer.
func (g *DBLessGateway) Protocol() string { return ProtocolDBLess }

// Sync implements Gateway.
func (g *DBLessGateway) Sync(ctx context.Context, t *Target) error {
	if g.Router != "" {
		if err := refusedByRouter(g.url, Root{RouterFlavor: g.Router, Version: g.Version}, t.State); err != nil {
			return err
		}
	}
	renderStart := time.Now()
	body, err := t.DBLessBody()
	if err != nil {
		return fmt.Errorf("rendering declarative configuration: %w", err)
	}
	pushStart := time.Now()
	debug := g.log.V(1)
	var post *dbless.PostTrace
	if debug.Enabled() {
		// When each part of the POST happened, for the debug line below: what the
		// end-to-end benchmark reads a change's way to Kong from (test/benche2e).
		post = &dbless.PostTrace{}
		ctx = dbless.WithPostTrace(ctx, post)
	}
	push := g.gw.PushBody
	if t.Resend {
		push = g.gw.PushBodyAgain
	}
	out, err := push(ctx, body)
	if out == dbless.Unchanged && err == nil {
		NoteUnchanged(ctx)
	}
	if out != dbless.Unchanged && debug.Enabled() {
		debug.Info("configuration sent", "gateway", g.url, "outcome", out.String(), "bytes", body.Len(),
			"render", pushStart.Sub(renderStart).String(), "push", time.Since(pushStart).String(),
			"round", t.seq, "syncStart", renderStart, "postStart", post.Start(), "postWritten", post.Written(),
			"postAnswered", post.Answered(), "connReused", post.Reused())
	}
	var rej *dbless.RejectedError
	if errors.As(err, &rej) {
		return fromDBLessRejection(g.url, rej, t.State)
	}
	return err
}

// HoldsOtherConfiguration implements ConfigurationHolder: what the gateway took from this
// process, or held when it first talked to it, is not t's configuration
// (dbless.Gateway.HoldsOther). t's body is rendered here, once for the sync that may follow.
func (g *DBLessGateway) HoldsOtherConfiguration(ctx context.Context, t *Target) (bool, error) {
	body, err := t.DBLessBody()
	if err != nil {
		return false, fmt.Errorf("rendering declarative configuration: %w", err)
	}
	return g.gw.HoldsOther(ctx, body)
}

// refusedByRouter is why a Kong whose GET / said router flavor would refuse the routes of s,
// nil when it takes them. Kong 3.7+ takes a route's traditional fields (paths, hosts, ...)
// under every router, turning them into an expression under the expressions router, and
// `expression` only under the expressions router: elsewhere the field does not exist and
// every such route is refused (kong/db/schema/entities/routes.lua; docs/kong-facts.md). So
// a target rendered for the traditional router goes to an expressions Kong (the round its
// answer asks for renders its routes as KIC's expressions), and one rendered for the
// expressions router to no other. The one judgement of both gateways that know their Kong's
// router: a discovered DB-less one (DBLessGateway.Router, every Sync) and one given by
// --kong-admin-url (DetectingGateway, on its first GET /).
//
// Kong before 3.7 does not take traditional fields under the expressions router (its route
// schema there requires `expression` and has no paths, hosts or methods): a target rendered
// for the traditional router (routes, none with an expression) is not sent to it either, and
// the round its answer asked for renders KIC's expressions. An unknown version is taken for
// a current one.
func refusedByRouter(url string, root Root, s *kongstate.State) error {
	flavor := root.RouterFlavor
	if flavor != "expressions" && hasExpressionRoutes(s) {
		return fmt.Errorf("gateway %s uses the %s router: configuration rendered for the expressions router, to be rendered again", url, flavor)
	}
	if flavor == "expressions" && !traditionalFieldsUnderExpressions(root.Version) && !hasExpressionRoutes(s) && hasTraditionalHTTPRoutes(s) {
		return fmt.Errorf("gateway %s runs Kong %s on the expressions router, which takes no traditional route fields before 3.7: "+
			"configuration rendered for the traditional router, to be rendered again for the expressions router once every gateway says it runs that router", url, root.Version)
	}
	return nil
}

// hasTraditionalHTTPRoutes reports whether s has a route of the HTTP family (the protocols
// Ingresses and HTTP and gRPC routes take; none said is Kong's http and https) without an
// expression. Stream routes (TCPIngress, UDPIngress, TCP/TLS/UDP routes) keep their
// traditional fields in a configuration rendered for the expressions router too, so they
// do not say which router it was rendered for: a Kong before 3.7 refuses them itself, one by
// one, whatever the round.
func hasTraditionalHTTPRoutes(s *kongstate.State) bool {
	if s == nil {
		return false
	}
	for _, svc := range s.Services {
		for _, r := range svc.Routes {
			if r.Expression == nil && isHTTPFamily(r.Protocols) {
				return true
			}
		}
	}
	return false
}

// isHTTPFamily reports whether a route of protocols serves HTTP or gRPC.
func isHTTPFamily(protocols []*string) bool {
	if len(protocols) == 0 {
		return true
	}
	for _, p := range protocols {
		switch kong.StringValue(p) {
		case "http", "https", "grpc", "grpcs", "ws", "wss":
			return true
		}
	}
	return false
}

// traditionalFieldsUnderExpressions reports whether Kong version v (GET /'s "version":
// "3.6.1", "3.4.3.12") takes routes' traditional fields under the expressions router: 3.7 and
// later, or a version it cannot read.
func traditionalFieldsUnderExpressions(v string) bool {
	majorText, rest, _ := strings.Cut(v, ".")
	minorText, _, _ := strings.Cut(rest, ".")
	major, err1 := strconv.Atoi(majorText)
	minor, err2 := strconv.Atoi(strings.TrimRightFunc(minorText, func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		return true
	}
	return major > 3 || major == 3 && minor >= 7
}

// hasExpressionRoutes reports whether s was rendered for the expressions router: a route
// carries an expression (routes of the traditional flavors never do).
func hasExpressionRoutes(s *kongstate.State) bool {
	if s == nil {
		return false
	}
	for _, svc := range s.Services {
		for _, r := range svc.Routes {
			if r.Expression != nil {
				return true
			}
		}
	}
	return false
}

// fromDBLessRejection maps the entities Kong refused to their objects: by their tags, or, for
// custom entities (no tags), by their fields in the state that was sent.
func fromDBLessRejection(url string, rej *dbless.RejectedError, sent *kongstate.State) *RejectedError {
	out := &RejectedError{Gateway: url, Message: rej.Detail(), Raw: rej.Raw, TooLarge: rej.TooLarge}
	for _, ent := range rej.Entities {
		ref, ok := kongstate.ObjectRefFromTags(ent.Tags)
		if !ok && len(ent.Tags) == 0 {
			ref, _ = sent.CustomEntityObject(ent.Entity)
		}
		for _, fe := range ent.Errors {
			out.Entities = append(out.Entities, EntityError{
				Object: ref, EntityType: ent.EntityType, EntityName: ent.EntityName,
				Field: fe.Field, Message: fe.Message,
			})
		}
	}
	if len(out.Entities) == 0 && rej.TooLarge != nil {
		out.Entities = oversizedObjects(sent, rej.TooLarge)
	}
	return out
}

// DBModeFactory builds the Gateway of a database-backed Kong. httpClient reaches it (TLS
// server name of a discovered gateway included); nil means the --kong-admin-* settings.
type DBModeFactory func(url string, httpClient *http.Client) (Gateway, error)

// DetectingGateway learns whether a Kong has a database (GET /, configuration.database) the
// first time it syncs, after the cache barrier, and then syncs the way that Kong needs.
type DetectingGateway struct {
	url    string
	client *kong.Client
	dbMode DBModeFactory
	log    logr.Logger
	// Flavors, when set, is told the gateway's router flavor.
	Flavors *RouterFlavors
	// DBLessRefused, when set, is the error a DB-less Kong gets instead of a sync (KIC's
	// --skip-ca-certificates, which only database mode can honour).
	DBLessRefused error

	mu    sync.Mutex
	inner Gateway
	// database is the gateway's mode once an answer to GET / said it (Detect's, Answered's
	// or the first Sync's); nil before. Unlike probed it is kept after the first Sync took
	// the answer, so that Database never forgets between the two.
	database *bool

	// rootMu is held while GET / is asked for detection, so that a Sync waits for the answer
	// of a Detect in flight instead of asking again; probed is that answer, for the first
	// Sync to take.
	rootMu sync.Mutex
	probed *Root
}

// NewDetectingGateway returns a Gateway for the Kong at url. dbMode may be nil when database
// mode is not supported by the caller; a database-backed Kong then fails every sync.
func NewDetectingGateway(url string, client *kong.Client, dbMode DBModeFactory, log logr.Logger) *DetectingGateway {
	return &DetectingGateway{url: url, client: client, dbMode: dbMode, log: log}
}

// URL implements Gateway.
func (g *DetectingGateway) URL() string { return g.url }

// Protocol implements ProtocolNamer: the detected gateway's, "" before the first sync reached
// it.
func (g *DetectingGateway) Protocol() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inner == nil {
		return ""
	}
	return protocolOf(g.inner)
}

// Database reports whether the gateway has a database, once an answer to GET / said so
// (known): the one Detect or Answered took while the cache synced, or the first Sync's. The
// loop reads it as a sync starts, before that sync has detected the mode itself
// (SyncsByDiff).
func (g *DetectingGateway) Database() (db, known bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.database == nil {
		return false, false
	}
	return *g.database, true
}

// learned records the mode an answer to GET / said (Database).
func (g *DetectingGateway) learned(root Root) {
	g.mu.Lock()
	g.database = &root.Database
	g.mu.Unlock()
}

// Preparer is a Gateway that can do a sync's work but the writes ahead of time: a standby
// replica calls Prepare with its own translation so that its first sync as leader is short
// (dbmode.Gateway.Prepare). Prepare only reads the gateway. ErrNothingToPrepare means it
// never will have anything to prepare (a DB-less Kong).
type Preparer interface {
	Prepare(ctx context.Context, t *Target) error
}

// ErrNothingToPrepare is a Preparer's answer when there is nothing to prepare, now or later.
var ErrNothingToPrepare = errors.New("nothing to prepare")

// Prepare implements Preparer: it learns the gateway's mode as Sync does, and prepares a
// database-backed gateway's next sync; a DB-less gateway has nothing to prepare.
func (g *DetectingGateway) Prepare(ctx context.Context, t *Target) error {
	inner, err := g.detected(ctx, t)
	if err != nil {
		return err
	}
	if p, ok := inner.(Preparer); ok {
		return p.Prepare(ctx, t)
	}
	return ErrNothingToPrepare
}

// Sync implements Gateway.
func (g *DetectingGateway) Sync(ctx context.Context, t *Target) error {
	inner, err := g.detected(ctx, t)
	if err != nil {
		return err
	}
	return inner.Sync(ctx, t)
}

// HoldsOtherConfiguration implements ConfigurationHolder for the gateway detected: it
// detects first, as Sync does (the loop asks after a sync, so the mode is known by then), and
// delegates to a DB-less one. A database-backed one cannot tell: false, so that what is asked
// of it is sent as before (ConfigurationHolder).
func (g *DetectingGateway) HoldsOtherConfiguration(ctx context.Context, t *Target) (bool, error) {
	inner, err := g.detected(ctx, t)
	if err != nil {
		return false, err
	}
	if h, ok := inner.(ConfigurationHolder); ok {
		return h.HoldsOtherConfiguration(ctx, t)
	}
	return false, nil
}

// detected is the gateway of the mode the Kong has, learned the first time, when t is a
// target that Kong's router takes.
func (g *DetectingGateway) detected(ctx context.Context, t *Target) (Gateway, error) {
	g.mu.Lock()
	inner := g.inner
	g.mu.Unlock()
	if inner == nil {
		root, err := g.root(ctx)
		if err != nil {
			return nil, err
		}
		db := root.Database
		g.learned(root)
		// A change of what the gateways run asks for a new round, rendered for their router.
		g.Flavors.ReportRoot(g.url, root)
		if err := refusedByRouter(g.url, root, t.State); err != nil {
			return nil, err // this gateway takes the new round's target
		}
		if !db && g.DBLessRefused != nil {
			return nil, fmt.Errorf("gateway %s is DB-less: %w", g.url, g.DBLessRefused)
		} else if !db {
			dbl := NewDBLessGateway(g.url, g.client, g.log)
			dbl.gw.SetBodyLimit(root.BodyLimit)
			inner = dbl
		} else if g.dbMode == nil {
			return nil, fmt.Errorf("gateway %s has a database, which this build cannot sync", g.url)
		} else if inner, err = g.dbMode(g.url, nil); err != nil {
			return nil, err
		}
		g.log.Info("gateway mode detected", "gateway", g.url, "database", db)
		g.mu.Lock()
		if g.inner == nil {
			g.inner = inner
		}
		inner = g.inner // a Prepare and a Sync that detected at once share the first one
		g.mu.Unlock()
	}
	return inner, nil
}

// Detect asks the gateway GET / now, unless its mode is known or an answer is at hand
// (Answered), so that the first Sync does not wait for that request: the controller calls it
// while its cache syncs (issue #13). It returns the answer (nil when the mode is known), for
// the other questions of the start (the edition, a database without leader election), so that
// each gateway is asked GET / once. The first Sync takes the answer as if it had asked
// itself, router check (refusedByRouter) and report to Flavors included; a failure is the
// first Sync's to meet again. Flavors is told the router here too, so that the first round,
// which translates once the cache synced, already renders for it: a gateway on the
// expressions router gets KIC's expressions in its first push, as KIC renders them from its
// first translation, not traditional fields first and the expressions a round later. (A
// standby, which syncs nothing, tells it before it translates: RouterFlavors.Learn.)
func (g *DetectingGateway) Detect(ctx context.Context) (*Root, error) {
	g.rootMu.Lock()
	defer g.rootMu.Unlock()
	g.mu.Lock()
	known := g.inner != nil
	g.mu.Unlock()
	if known {
		return nil, nil
	}
	if g.probed == nil {
		root, err := ReadRoot(ctx, g.client)
		if err != nil {
			return nil, err
		}
		g.probed = &root
	}
	root := *g.probed
	g.learned(root)
	g.Flavors.ReportRoot(g.url, root)
	return &root, nil
}

// Answered gives the gateway an answer of GET / asked before it was made (leader election
// decided by asking each gateway), for Detect and the first Sync to take instead of asking.
func (g *DetectingGateway) Answered(root Root) {
	g.rootMu.Lock()
	defer g.rootMu.Unlock()
	g.mu.Lock()
	known := g.inner != nil
	g.mu.Unlock()
	if !known {
		g.probed = &root
		g.learned(root)
	}
}

// AdminRootURL is the root URL of the gateway's Admin API client (kong.Client.BaseRootURL),
// by which GatewayFacts knows it.
func (g *DetectingGateway) AdminRootURL() string { return g.client.BaseRootURL() }

// root is Detect's answer, taken once, or else GET /.
func (g *DetectingGateway) root(ctx context.Context) (Root, error) {
	g.rootMu.Lock()
	defer g.rootMu.Unlock()
	if p := g.probed; p != nil {
		g.probed = nil
		return *p, nil
	}
	return ReadRoot(ctx, g.client)
}

// HasDatabase asks a Kong (GET /) whether it is database-backed.
func HasDatabase(ctx context.Context, client *kong.Client) (bool, error) {
	r, err := ReadRoot(ctx, client)
	return r.Database, err
}

// Root is what GET / says of a Kong that the controller needs.
type Root struct {
	Database     bool   // configuration.database is not "off"
	RouterFlavor string // configuration.router_flavor: traditional, traditional_compatible or expressions
	Enterprise   bool   // Kong Gateway Enterprise (IsEnterprise)
	Version      string // version ("3.10.0"; "" when not said)
	// Listens are Kong's proxy and stream listens (configuration.proxy_listeners and
	// stream_listeners), for Gateways' listener status; nil when GET / did not say.
	Listens *KongListens
	// NodeID is the Kong node's ID (node_id), for Konnect's nodes.
	NodeID string
	// BodyLimit is the Admin API's request body limit in bytes
	// (configuration.nginx_admin_client_max_body_size, "10m" by default): 0 when there is none
	// ("0") or GET / did not say.
	BodyLimit int64
}

// KongListens are the listens of one Kong (gatewayapi.KongListens, where what they serve is
// told).
type KongListens = gatewayapi.KongListens

// KongListen is one listen of a Kong.
type KongListen = gatewayapi.KongListen

// readListens reads a list of listeners from GET /'s configuration. Kong writes an empty
// list (stream_listen = off) as {}, an empty Lua table: no listen, as go-kong reads it.
func readListens(v any) []KongListen {
	list, _ := v.([]any)
	out := make([]KongListen, 0, len(list))
	for _, e := range list {
		m, _ := e.(map[string]any)
		port, ok := m["port"].(float64)
		if !ok {
			continue // a unix socket has no port
		}
		ssl, _ := m["ssl"].(bool)
		udp, _ := m["udp"].(bool)
		out = append(out, KongListen{Port: int(port), SSL: ssl, UDP: udp})
	}
	return out
}

// readPortMaps reads GET /'s configuration.port_maps ("80:8000", host port then Kong port;
// kong/conf_loader/parse.lua): Kong port -> host port. Kong refuses to start on an entry it
// cannot read, so one unread here is left out. nil without entries.
func readPortMaps(v any) map[int]int {
	list, _ := v.([]any)
	var out map[int]int
	for _, e := range list {
		s, _ := e.(string)
		host, kongPort, ok := strings.Cut(strings.TrimSpace(s), ":")
		h, herr := strconv.Atoi(strings.TrimSpace(host))
		k, kerr := strconv.Atoi(strings.TrimSpace(kongPort))
		if !ok || herr != nil || kerr != nil {
			continue
		}
		if out == nil {
			out = map[int]int{}
		}
		out[k] = h
	}
	return out
}

// ReadRoot asks a Kong GET /.
func ReadRoot(ctx context.Context, client *kong.Client) (Root, error) {
	root, err := client.Root(ctx)
	if err != nil {
		return Root{}, fmt.Errorf("reading the gateway's configuration (GET /): %w", err)
	}
	conf, _ := root["configuration"].(map[string]any)
	db, _ := conf["database"].(string)
	flavor, _ := conf["router_flavor"].(string)
	version, _ := root["version"].(string)
	nodeID, _ := root["node_id"].(string)
	out := Root{Database: db != "" && db != "off", RouterFlavor: flavor, Enterprise: IsEnterprise(root), Version: version, NodeID: nodeID}
	if limit, ok := conf[kongrules.AdminMaxBodySizeKey].(string); ok {
		// Unreadable: no limit known, and a 413 answer, if one comes, says it.
		out.BodyLimit, _ = kongrules.ParseNginxSize(limit)
	}
	if _, ok := conf["proxy_listeners"]; ok {
		out.Listens = &KongListens{Proxy: readListens(conf["proxy_listeners"]), Stream: readListens(conf["stream_listeners"]),
			PortMaps: readPortMaps(conf["port_maps"])}
	}
	return out, nil
}

// RouterFlavors is what the gateways said of their router, shared by the gateways that learn
// it and the translation that depends on it: routes are rendered for the expressions router
// once every gateway that answered says "expressions" (translation-rules.md §13). A change asks for
// a new round. Safe for concurrent use; a nil *RouterFlavors records nothing.
type RouterFlavors struct {
	mu       sync.Mutex
	byURL    map[string]string
	versions map[string]semver.Version // the Kong version each gateway said (GET / "version"), when it parsed
	listens  map[string]KongListens    // the listens each gateway said, when it said
	nodes    map[string]GatewayNode    // each gateway's node, when it said its node_id
	onChange func()
}

// NewRouterFlavors returns an empty record; onChange (may be nil) is called when the answer
// of Expressions, RustRegexes or KongVersion changes.
func NewRouterFlavors(onChange func()) *RouterFlavors {
	return &RouterFlavors{byURL: map[string]string{}, versions: map[string]semver.Version{}, listens: map[string]KongListens{}, nodes: map[string]GatewayNode{}, onChange: onChange}
}

// Report records what the gateway at url said of its router.
func (f *RouterFlavors) Report(url, flavor string) {
	f.ReportRoot(url, Root{RouterFlavor: flavor})
}

// ReportRoot records what the gateway at url said in GET /: its router and its Kong
// version. The version decides what KIC renders only for some Kong versions (the redirect
// plugin from 3.9, sticky sessions from 3.11), so it travels with the router, the same way
// and for the same gateways. A version that does not parse ("" included) is no version.
func (f *RouterFlavors) ReportRoot(url string, root Root) {
	if f == nil {
		return
	}
	v, verr := ParseKongVersion(root.Version)
	f.mu.Lock()
	before := f.answers()
	f.byURL[url] = root.RouterFlavor
	if verr == nil {
		f.versions[url] = v
	} else {
		delete(f.versions, url)
	}
	if root.Listens != nil {
		f.listens[url] = *root.Listens
	}
	if root.NodeID != "" {
		f.nodes[url] = GatewayNode{URL: url, NodeID: root.NodeID, Version: root.Version}
	}
	changed := before != f.answers()
	f.mu.Unlock()
	if changed && f.onChange != nil {
		f.onChange()
	}
}

// flavorAnswers is what a RouterFlavors answers translation and status: a change of it asks
// for a round (whose report writes the Gateways' listener status again).
type flavorAnswers struct {
	expressions, rustRegexes bool
	kongVersion              string
	listens                  string
}

func (f *RouterFlavors) answers() flavorAnswers {
	return flavorAnswers{f.expressions(), f.rustRegexes(), f.kongVersion().String(), fmt.Sprint(f.listensByURL())}
}

// Listens are the listens of every gateway that said them (GET /), in the order of their
// URLs; none for a nil *RouterFlavors. A Gateway's listener is served only where every
// gateway serves it (status.KongPorts).
func (f *RouterFlavors) Listens() []KongListens {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.listensByURL()
}

// GatewayNode is a gateway as Kong's node: its URL, node_id and version (GET /).
type GatewayNode struct {
	URL, NodeID, Version string
}

// Nodes are the gateways that said their node_id, by URL (for Konnect's nodes); none for a
// nil *RouterFlavors.
func (f *RouterFlavors) Nodes() []GatewayNode {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]GatewayNode, 0, len(f.nodes))
	for _, url := range slices.Sorted(maps.Keys(f.nodes)) {
		out = append(out, f.nodes[url])
	}
	return out
}

func (f *RouterFlavors) listensByURL() []KongListens {
	out := make([]KongListens, 0, len(f.listens))
	for _, url := range slices.Sorted(maps.Keys(f.listens)) {
		out = append(out, f.listens[url])
	}
	return out
}

// KongVersion is the lowest Kong version the gateways that answered reported (major, minor
// and patch only), zero when none did: one configuration goes to every gateway, so it may
// use only what the oldest of them has (a redirect plugin a 3.8 gateway lacks would make
// it refuse the whole configuration). Zero for a nil *RouterFlavors.
func (f *RouterFlavors) KongVersion() semver.Version {
	if f == nil {
		return semver.Version{}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.kongVersion()
}

func (f *RouterFlavors) kongVersion() semver.Version {
	var low semver.Version
	first := true
	for _, v := range f.versions {
		if first || v.LT(low) {
			low, first = v, false
		}
	}
	return low
}

// ParseKongVersion reads a Kong version as GET / says it ("3.9.1", "3.4.3.12" for Kong
// Gateway Enterprise, "3.10.0-rc.1"...) with go-kong's parser, the one KIC reads its
// gateways' version with, keeping its major, minor and patch: the parts KIC compares with its
// version cut-offs (internal/versions).
func ParseKongVersion(s string) (semver.Version, error) {
	if strings.TrimSpace(s) == "" {
		return semver.Version{}, errors.New("no Kong version")
	}
	v, err := kong.ParseSemanticVersion(s)
	if err != nil {
		return semver.Version{}, fmt.Errorf("Kong version %q: %w", s, err)
	}
	return semver.Version{Major: v.Major(), Minor: v.Minor(), Patch: v.Patch()}, nil
}

// KeepOnly forgets what the gateways not in urls said: gateways that went away (a discovered
// gateway's Pod replaced, at a rolling upgrade of Kong that changes its router) no longer
// decide how routes are rendered.
func (f *RouterFlavors) KeepOnly(urls map[string]bool) {
	if f == nil {
		return
	}
	f.mu.Lock()
	before := f.answers()
	for url := range f.byURL {
		if !urls[url] {
			delete(f.byURL, url)
			delete(f.versions, url)
			delete(f.listens, url)
			delete(f.nodes, url)
		}
	}
	changed := before != f.answers()
	f.mu.Unlock()
	if changed && f.onChange != nil {
		f.onChange()
	}
}

// Expressions reports whether routes are to be rendered for the expressions router (false
// for a nil *RouterFlavors).
func (f *RouterFlavors) Expressions() bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.expressions()
}

// RustRegexes reports whether a gateway that answered compiles route regexes with the Rust
// regex crate: every router flavor but "traditional" does (traditional_compatible, Kong 3's
// default, turns a traditional route into an expression, kong/router/transform.lua), so the
// translation must leave out the regexes Rust refuses, not only those PCRE refuses (false for
// a nil *RouterFlavors).
func (f *RouterFlavors) RustRegexes() bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rustRegexes()
}

func (f *RouterFlavors) rustRegexes() bool {
	for _, fl := range f.byURL {
		if fl != "" && fl != "traditional" {
			return true
		}
	}
	return false
}

func (f *RouterFlavors) expressions() bool {
	if len(f.byURL) == 0 {
		return false
	}
	for _, fl := range f.byURL {
		if fl != "expressions" {
			return false
		}
	}
	return true
}

// RefuseRedirect is the Admin API clients' http.Client.CheckRedirect: a redirect is never
// followed. The Admin API does not redirect; one that does would take the Kong-Admin-Token
// (and any credentials) to wherever it points (docs/security.md, item 3).
func RefuseRedirect(req *http.Request, via []*http.Request) error {
	return fmt.Errorf("the Kong Admin API answered %s with a redirect to %s; konductor does not follow redirects (its credentials would go along)",
		via[0].URL.Redacted(), req.URL.Redacted())
}
