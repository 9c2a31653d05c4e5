package dbmode

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	neturl "net/url"
	"sort"
	"sync"

	"github.com/blang/semver/v4"
	"github.com/go-logr/logr"
	"github.com/kong/go-database-reconciler/pkg/crud"
	"github.com/kong/go-database-reconciler/pkg/diff"
	"github.com/kong/go-database-reconciler/pkg/dump"
	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-database-reconciler/pkg/state"
	"github.com/kong/go-database-reconciler/pkg/utils"
	"github.com/kong/go-kong/kong"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongstate"
)

const (
	// DefaultFilterTag is KIC's --kong-admin-filter-tag default.
	DefaultFilterTag = "managed-by-ingress-controller"
	// DefaultConcurrency is KIC's --kong-admin-concurrency default.
	DefaultConcurrency = 10
)

// Options configures a Gateway. Zero values take the documented defaults.
type Options struct {
	// FilterTag marks the entities this controller owns. Default DefaultFilterTag.
	FilterTag string
	// Concurrency bounds the Admin API write requests in flight. Default DefaultConcurrency.
	Concurrency int
	// Logger receives one line per sync that changed something.
	Logger logr.Logger
}

// Gateway syncs one database-backed Kong by difference. It implements dataplane.Gateway.
// Sync and Diff may be called from several goroutines; they run one at a time.
type Gateway struct {
	url    string
	client *kong.Client
	opts   Options

	// mu serializes syncs: two concurrent diffs against the same Kong would each apply
	// the other's changes again.
	mu      sync.Mutex
	version *semver.Version // from GET /, learned once: it cannot change under a live Kong
}

var _ dataplane.Gateway = (*Gateway)(nil)

// New returns the Gateway of the database-backed Kong at url. httpClient carries TLS and
// the admin token (manager.AdminHTTPClient); nil means http.DefaultClient's settings. The
// Gateway wraps its transport with a cache of entity schemas (GET /schemas/...), which
// go-database-reconciler reads on every sync and which change only with the Kong version.
func New(url string, httpClient *http.Client, opts Options) (*Gateway, error) {
	if opts.FilterTag == "" {
		opts.FilterTag = DefaultFilterTag
	}
	if opts.Concurrency < 1 {
		opts.Concurrency = DefaultConcurrency
	}
	hc := &http.Client{}
	if httpClient != nil {
		cp := *httpClient
		hc = &cp
	}
	u, err := neturl.Parse(url)
	if err != nil {
		return nil, fmt.Errorf("kong admin url %q: %w", url, err)
	}
	hc.Transport = newSchemaCache(hc.Transport, u.Path)
	client, err := kong.NewClient(kong.String(url), hc)
	if err != nil {
		return nil, fmt.Errorf("kong admin url %q: %w", url, err)
	}
	return &Gateway{url: url, client: client, opts: opts}, nil
}

// URL implements dataplane.Gateway.
func (g *Gateway) URL() string { return g.url }

// Sync implements dataplane.Gateway: it makes the entities carrying the filter tag equal to
// the target, and touches no other entity.
func (g *Gateway) Sync(ctx context.Context, t *dataplane.Target) error {
	res, err := g.Apply(ctx, t.State)
	if res != nil && res.Total() > 0 {
		g.opts.Logger.Info("database synced", "gateway", g.url,
			"created", res.Creates, "updated", res.Updates, "deleted", res.Deletes, "failed", res.Failed())
	}
	return err
}

// Apply makes the gateway hold s and returns what it did. On failure the Result lists the
// changes that were made and those that failed (Change.Err), and the error is a
// *dataplane.RejectedError when every failure was Kong refusing an entity as invalid.
func (g *Gateway) Apply(ctx context.Context, s *kongstate.State) (*Result, error) {
	return g.run(ctx, s, false)
}

// Diff returns what Apply would do, without changing anything: it only reads.
func (g *Gateway) Diff(ctx context.Context, s *kongstate.State) (*Result, error) {
	return g.run(ctx, s, true)
}

func (g *Gateway) run(ctx context.Context, s *kongstate.State, dry bool) (*Result, error) {
	g.mu.Lock()
	defer g.mu.Unlock()

	version, err := g.kongVersion(ctx)
	if err != nil {
		return nil, err
	}
	dumpConfig := dump.Config{
		SelectorTags:                         []string{g.opts.FilterTag},
		IsConsumerGroupScopedPluginSupported: utils.Kong340Version.LTE(version),
	}
	raw, err := dump.Get(ctx, g.client, dumpConfig)
	if err != nil {
		return nil, fmt.Errorf("listing the entities tagged %q on %s: %w", g.opts.FilterTag, g.url, err)
	}
	current, err := state.Get(raw)
	if err != nil {
		return nil, fmt.Errorf("indexing the entities of %s: %w", g.url, err)
	}

	content := s.Content()
	// The select tag makes file.Get add the filter tag to every entity, as decK does.
	content.Info = &file.Info{SelectorTags: []string{g.opts.FilterTag}}
	targetRaw, err := file.Get(ctx, content, file.RenderConfig{CurrentState: current, KongVersion: version}, dumpConfig, g.client)
	if err != nil {
		return nil, fmt.Errorf("building the target state for %s: %w", g.url, err)
	}
	target, err := state.Get(targetRaw)
	if err != nil {
		return nil, fmt.Errorf("indexing the target state for %s: %w", g.url, err)
	}

	syncer, err := diff.NewSyncer(diff.SyncerOpts{
		CurrentState:        current,
		TargetState:         target,
		KongClient:          g.client,
		SilenceWarnings:     true,
		EnableEntityActions: true,
		// With entity actions the syncer prints only the changes it dropped after a
		// failure; those go to the log rather than to stdout.
		CreatePrintln: g.printer(), UpdatePrintln: g.printer(), DeletePrintln: g.printer(),
	})
	if err != nil {
		return nil, fmt.Errorf("diffing %s: %w", g.url, err)
	}

	res := &Result{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// The syncer blocks until every action is read, and closes the channel when done.
		for a := range syncer.GetResultChan() {
			res.Changes = append(res.Changes, changeOf(a))
		}
	}()
	stats, errs, _ := syncer.Solve(ctx, g.opts.Concurrency, dry, false)
	<-done
	res.Creates, res.Updates, res.Deletes = int(stats.CreateOps.Count()), int(stats.UpdateOps.Count()), int(stats.DeleteOps.Count())
	res.sort()
	if len(errs) == 0 {
		return res, nil
	}
	return res, g.syncError(res, errs)
}

func (g *Gateway) printer() func(a ...any) {
	return func(a ...any) { g.opts.Logger.V(1).Info(fmt.Sprintln(a...), "gateway", g.url) }
}

// kongVersion reads GET / once. A Kong's version cannot change without a restart of that
// Kong, which the schema cache notices, and the version only selects go-database-reconciler's
// compatibility paths (3.x throughout).
func (g *Gateway) kongVersion(ctx context.Context) (semver.Version, error) {
	if g.version != nil {
		return *g.version, nil
	}
	root, err := g.client.Root(ctx)
	if err != nil {
		return semver.Version{}, fmt.Errorf("reading the version of %s (GET /): %w", g.url, err)
	}
	s, _ := root["version"].(string)
	v, err := utils.ParseKongVersion(s)
	if err != nil {
		return semver.Version{}, fmt.Errorf("parsing the version %q of %s: %w", s, g.url, err)
	}
	g.version = &v
	return v, nil
}

// syncError turns the syncer's errors into the loop's terms: a RejectedError when every
// failure is Kong refusing an entity (4xx: schema violation, unique violation, missing
// foreign key), which the same configuration would hit again; a plain error otherwise (5xx,
// network, a cancelled context), which the loop retries with backoff.
func (g *Gateway) syncError(res *Result, errs []error) error {
	transient := false
	for _, err := range errs {
		if apiErr := apiErrorOf(err); apiErr == nil || apiErr.Code() < 400 || apiErr.Code() >= 500 {
			transient = true
		}
	}
	joined := errors.Join(errs...)
	if transient {
		return fmt.Errorf("sync to %s incomplete (%d changes applied; retried on the next sync): %w",
			g.url, res.Total(), joined)
	}
	rej := &dataplane.RejectedError{Gateway: g.url, Message: joined.Error()}
	for _, c := range res.Changes {
		apiErr := apiErrorOf(c.Err)
		if apiErr == nil {
			continue
		}
		ref, _ := kongstate.ObjectRefFromTags(c.Tags)
		for _, fe := range fieldErrors(apiErr) {
			rej.Entities = append(rej.Entities, dataplane.EntityError{
				Object: ref, EntityType: c.Kind, EntityName: c.Name, Field: fe.field, Message: fe.message,
			})
		}
	}
	return rej
}

// apiErrorOf finds Kong's answer in a syncer error. crud.ActionError has no Unwrap, so
// errors.As alone does not reach it.
func apiErrorOf(err error) *kong.APIError {
	if err == nil {
		return nil
	}
	var apiErr *kong.APIError
	if errors.As(err, &apiErr) {
		return apiErr
	}
	var actErr *crud.ActionError
	if errors.As(err, &actErr) && errors.As(actErr.Err, &apiErr) {
		return apiErr
	}
	return nil
}

// Result is what a sync did, or what a dry run would do.
type Result struct {
	// Changes are sorted by operation (creates, updates, deletes), kind and name. After a
	// failure they include the changes that failed (Err set); changes that were not tried
	// because the syncer stopped at the failure are not listed.
	Changes []Change
	// Creates, Updates and Deletes count the changes applied (in a dry run: to apply).
	Creates, Updates, Deletes int
}

// Total is the number of changes applied (or to apply).
func (r *Result) Total() int { return r.Creates + r.Updates + r.Deletes }

// Failed is the number of changes Kong refused or that failed.
func (r *Result) Failed() int {
	n := 0
	for _, c := range r.Changes {
		if c.Err != nil {
			n++
		}
	}
	return n
}

var opOrder = map[Op]int{Create: 0, Update: 1, Delete: 2}

func (r *Result) sort() {
	sort.SliceStable(r.Changes, func(i, j int) bool {
		a, b := r.Changes[i], r.Changes[j]
		if a.Op != b.Op {
			return opOrder[a.Op] < opOrder[b.Op]
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Name < b.Name
	})
}
