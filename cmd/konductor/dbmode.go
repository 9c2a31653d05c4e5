package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

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
// --kubeconfig, --ingress-class, --watch-namespace, ... and their CONTROLLER_* variables).
// With -f it translates manifests instead of reading the cluster. Output: one line per
// entity ("create|update|delete <kind> <name>", with the object it stands for), the fields
// of each update, and a summary line per gateway.
func runDiff(ctx context.Context, args []string, stdout io.Writer) error {
	files, rest, err := splitFileFlags(args)
	if err != nil {
		return err
	}
	cfg, err := config.ParseEnviron(rest, os.Environ())
	if err != nil {
		return fmt.Errorf("diff: %w", err)
	}
	state, err := diffTarget(ctx, cfg, files)
	if err != nil {
		return fmt.Errorf("diff: %w", err)
	}
	httpClient, err := manager.AdminHTTPClient(cfg)
	if err != nil {
		return fmt.Errorf("diff: %w", err)
	}
	for _, u := range cfg.KongAdminURLs {
		if err := diffGateway(ctx, u, httpClient, cfg, state, stdout); err != nil {
			return fmt.Errorf("diff: %w", err)
		}
	}
	return nil
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
// controller would.
func diffTarget(ctx context.Context, cfg *config.Config, files []string) (*kongstate.State, error) {
	opts := store.Options{IngressClass: cfg.IngressClass, Namespaces: cfg.WatchNamespaces}
	var st *store.Store
	if len(files) > 0 {
		objs, err := manifest.Load(files...)
		if err != nil {
			return nil, err
		}
		if st, err = store.NewForObjects(objs, opts); err != nil {
			return nil, err
		}
	} else {
		var err error
		if st, err = clusterStore(cfg.Kubeconfig, cfg.APIServerHost, opts); err != nil {
			return nil, err
		}
	}
	snap, err := st.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	// The workspace keys the deterministic IDs, as the controller's translation does.
	state, problems := translator.Translate(snap, translator.Options{Workspace: cfg.KongWorkspace})
	for _, p := range problems {
		fmt.Fprintln(diffStderr, p.String())
	}
	return state, nil
}

// clusterStore reads the cluster's objects as the controller does (its kinds, at the versions
// the cluster serves, filtered by class and namespaces), with one List per kind.
func clusterStore(kubeconfig, apiServerHost string, opts store.Options) (*store.Store, error) {
	restCfg, err := manager.RestConfig(kubeconfig, apiServerHost)
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

func diffGateway(ctx context.Context, url string, httpClient *http.Client, cfg *config.Config, state *kongstate.State, w io.Writer) error {
	kc, err := kong.NewClient(kong.String(url), httpClient)
	if err != nil {
		return fmt.Errorf("--kong-admin-url %q: %w", url, err)
	}
	db, err := dataplane.HasDatabase(ctx, kc)
	if err != nil {
		return err
	}
	if !db {
		return fmt.Errorf("gateway %s has no database (DB-less): diff compares a database-backed Kong; use `konductor translate` to see its configuration", url)
	}
	g, err := dbmode.New(url, httpClient, dbmode.Options{FilterTags: cfg.KongAdminFilterTags, Concurrency: cfg.KongAdminConcurrency, SkipCACertificates: cfg.SkipCACertificates,
		Workspace: cfg.KongWorkspace})
	if err != nil {
		return err
	}
	res, err := g.Diff(ctx, state)
	if err != nil {
		return err
	}
	return printResult(w, url, strings.Join(cfg.KongAdminFilterTags, ","), res)
}

func printResult(w io.Writer, url, tag string, res *dbmode.Result) error {
	var b strings.Builder
	for _, c := range res.Changes {
		fmt.Fprintf(&b, "%s %s %s", c.Op, c.Kind, c.Name)
		if ref, ok := kongstate.ObjectRefFromTags(c.Tags); ok {
			fmt.Fprintf(&b, " (%s)", ref)
		}
		b.WriteByte('\n')
		for _, f := range c.Fields {
			fmt.Fprintf(&b, "    %s: %s -> %s\n", f.Field, orNone(f.Old), orNone(f.New))
		}
	}
	fmt.Fprintf(&b, "%s: %d to create, %d to update, %d to delete (entities tagged %q)\n",
		url, res.Creates, res.Updates, res.Deletes, tag)
	_, err := io.WriteString(w, b.String())
	return err
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
