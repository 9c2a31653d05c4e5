package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/kong/go-kong/kong"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/config"
	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/dataplane/dbmode"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/manager"
	"github.com/konductor/konductor/internal/manifest"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// diffStderr is where runDiff reports translation problems; a variable so tests can capture it.
var diffStderr io.Writer = os.Stderr

// runDiff prints what a sync would change on each database-backed gateway, and changes
// nothing (go-database-reconciler's dry run: only reads reach Kong):
//
//	konductor diff [controller flags] [-f FILE|DIR ...]
//
// It takes the controller's flags (--kong-admin-url, token, TLS, --kong-admin-filter-tag,
// --kubeconfig, --ingress-class, --watch-namespace, --feature-gates, ... and their
// CONTROLLER_* variables). With -f it translates manifests instead of reading the cluster.
// It translates as the controller would for those gateways (manager.TranslationOptions):
// their Kong version and router, as each says in GET /, whether they are Kong Enterprise
// and their custom entity schemas, the feature gates and the workspace. Output: one line per
// entity ("create|update|delete <kind> <name>", with the object it stands for; a deletion
// of an object left out to fail closed says so and why), the fields of each update, and a
// summary line per gateway.
func runDiff(ctx context.Context, args []string, stdout io.Writer) error {
	files, rest, err := splitFileFlags(args)
	if err != nil {
		return err
	}
	cfg, err := config.ParseEnviron(rest, os.Environ())
	if err != nil {
		return fmt.Errorf("diff: %w", err)
	}
	httpClient, err := manager.AdminHTTPClient(cfg)
	if err != nil {
		return fmt.Errorf("diff: %w", err)
	}
	gateways, err := askGateways(ctx, cfg, httpClient)
	if err != nil {
		return fmt.Errorf("diff: %w", err)
	}
	res, err := diffTarget(ctx, cfg, files, gateways)
	if err != nil {
		return fmt.Errorf("diff: %w", err)
	}
	for _, u := range cfg.KongAdminURLs {
		if err := diffGateway(ctx, u, httpClient, cfg, res, stdout); err != nil {
			return fmt.Errorf("diff: %w", err)
		}
	}
	return nil
}

// askGateways asks each --kong-admin-url GET /, as the controller's gateways ask before
// their first round: a DB-less one is an error (diff compares a database), the others'
// routers and versions are recorded for the translation, with their editions.
func askGateways(ctx context.Context, cfg *config.Config, httpClient *http.Client) (manager.Gateways, error) {
	var clients []*kong.Client
	for _, u := range cfg.KongAdminURLs {
		kc, err := kong.NewClient(kong.String(u), httpClient)
		if err != nil {
			return manager.Gateways{}, fmt.Errorf("--kong-admin-url %q: %w", u, err)
		}
		clients = append(clients, kc)
	}
	gw := manager.Gateways{Flavors: dataplane.NewRouterFlavors(nil),
		Facts: dataplane.NewGatewayFacts(func() []*kong.Client { return clients })}
	for i, kc := range clients {
		root, err := dataplane.ReadRoot(ctx, kc)
		if err != nil {
			return manager.Gateways{}, err
		}
		url := cfg.KongAdminURLs[i]
		if !root.Database {
			return manager.Gateways{}, fmt.Errorf("gateway %s has no database (DB-less): diff compares a database-backed Kong; use `konductor translate` to see its configuration", url)
		}
		gw.Flavors.ReportRoot(url, root)
		gw.Facts.RecordRoot(kc.BaseRootURL(), root)
	}
	return gw, nil
}

// splitFileFlags takes -f/--filename (repeatable, "-f x", "-f=x") out of args, leaving the
// controller's flags for config.Parse.
func splitFileFlags(args []string) (files, rest []string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a, "=")
		if name != "-f" && name != "--filename" && name != "-filename" {
			rest = append(rest, a)
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				return nil, nil, fmt.Errorf("diff: %s needs a FILE|DIR", name)
			}
			i++
			val = args[i]
		}
		files = append(files, val)
	}
	return files, rest, nil
}

// diffTarget translates the manifests, or the cluster when there are none, as the
// controller would for gateways.
func diffTarget(ctx context.Context, cfg *config.Config, files []string, gateways manager.Gateways) (translator.Result, error) {
	opts := store.Options{IngressClass: cfg.IngressClass, Namespaces: cfg.WatchNamespaces}
	var st *store.Store
	if len(files) > 0 {
		objs, err := manifest.Load(files...)
		if err != nil {
			return translator.Result{}, err
		}
		if st, err = store.NewForObjects(objs, opts); err != nil {
			return translator.Result{}, err
		}
	} else {
		var err error
		if st, err = clusterStore(cfg.Kubeconfig, cfg.APIServerHost, "", opts); err != nil {
			return translator.Result{}, err
		}
	}
	snap, err := st.Snapshot(ctx)
	if err != nil {
		return translator.Result{}, err
	}
	res := translator.Build(snap, manager.TranslationOptions(ctx, cfg, gateways, snap, time.Now()))
	for _, p := range res.Problems {
		fmt.Fprintln(diffStderr, p.String())
	}
	return res, nil
}

// clusterStore reads the cluster's objects as the controller does (its kinds, at the versions
// the cluster serves, filtered by class and namespaces), with one List per kind, in the
// kubeconfig's context kubeContext ("": its current one).
func clusterStore(kubeconfig, apiServerHost, kubeContext string, opts store.Options) (*store.Store, error) {
	restCfg, err := manager.RestConfigInContext(kubeconfig, apiServerHost, kubeContext)
	if err != nil {
		return nil, err
	}
	// Kinds served only at an older version (TCPRoute v1alpha2, ...) are read at it, as
	// the controller reads them.
	if opts.Kinds, opts.Versions, err = manager.InstalledOptionalKindsAt(restCfg); err != nil {
		return nil, err
	}
	// A direct (uncached) client: one List per kind, no informers to wait for.
	c, err := client.New(restCfg, client.Options{Scheme: store.Scheme()})
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return store.New(c, opts), nil
}

func diffGateway(ctx context.Context, url string, httpClient *http.Client, cfg *config.Config, target translator.Result, w io.Writer) error {
	g, err := dbmode.New(url, httpClient, dbmode.Options{FilterTags: cfg.KongAdminFilterTags, Concurrency: cfg.KongAdminConcurrency, SkipCACertificates: cfg.SkipCACertificates,
		Workspace: cfg.KongWorkspace})
	if err != nil {
		return err
	}
	res, err := g.Diff(ctx, target.State)
	if err != nil {
		return err
	}
	return printResult(w, url, strings.Join(cfg.KongAdminFilterTags, ","), res, target)
}

// printResult prints a gateway's diff. A deletion of what an object left out to fail closed
// made is marked deliberate, with the reason: the controller removes it on purpose; so is a
// target's (it carries no tags) whose upstream's deletion is.
func printResult(w io.Writer, url, tag string, res *dbmode.Result, target translator.Result) error {
	why := map[int]string{}          // the deliberate deletions, by change
	upstreams := map[string]string{} // the upstreams deleted deliberately, by ID: why
	for i, c := range res.Changes {
		if ref, ok := kongstate.ObjectRefFromTags(c.Tags); ok && c.Op == dbmode.Delete {
			if reason, left := target.LeftOutBecause(ref); left {
				why[i] = reason
				if c.Kind == "upstream" && c.ID != "" {
					upstreams[c.ID] = reason
				}
			}
		}
	}
	for i, c := range res.Changes {
		if reason, ok := upstreams[c.Upstream]; ok && c.Op == dbmode.Delete && c.Upstream != "" {
			why[i] = "its upstream is left out: " + reason
		}
	}
	var b strings.Builder
	for i, c := range res.Changes {
		fmt.Fprintf(&b, "%s %s %s", c.Op, c.Kind, c.Name)
		if ref, ok := kongstate.ObjectRefFromTags(c.Tags); ok {
			fmt.Fprintf(&b, " (%s)", ref)
		}
		if reason, ok := why[i]; ok {
			fmt.Fprintf(&b, " [deliberate, fail closed: %s]", reason)
		}
		b.WriteByte('\n')
		for _, f := range c.Fields {
			fmt.Fprintf(&b, "    %s: %s -> %s\n", f.Field, orNone(f.Old), orNone(f.New))
		}
	}
	fmt.Fprintf(&b, "%s: %d to create, %d to update, %d to delete", url, res.Creates, res.Updates, res.Deletes)
	if len(why) > 0 {
		fmt.Fprintf(&b, " (%d deliberate: objects left out to fail closed)", len(why))
	}
	fmt.Fprintf(&b, " (entities tagged %q)\n", tag)
	_, err := io.WriteString(w, b.String())
	return err
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
