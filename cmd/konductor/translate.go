package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/kong/go-kong/kong"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/konductor/konductor/internal/config"
	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/manager"
	"github.com/konductor/konductor/internal/manifest"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// translateStderr is where runTranslate reports problems; a variable so tests can capture it.
var translateStderr io.Writer = os.Stderr

// fileList is a repeatable -f flag.
type fileList []string

func (f *fileList) String() string     { return strings.Join(*f, ",") }
func (f *fileList) Set(v string) error { *f = append(*f, v); return nil }

// runTranslate prints the Kong declarative configuration that the given manifests produce,
// without a cluster:
//
//	konductor translate -f FILE|DIR [-f ...] [--ingress-class kong] [--output yaml|json] [--kong-admin-url URL]
//	                    [--kong-version 3.9.1] [--router-flavor traditional_compatible] [--feature-gates A=true,B=false]
//
// The objects go through the same store and translator as in the controller, so the output
// is what DB-less Kong would receive. Translation problems are printed to stderr, one a
// line; they do not make the command fail, as they do not stop the controller. Only input
// that cannot be read or decoded does. With --kong-admin-url, that Kong is asked what
// translation learns from the gateways (Kong Enterprise or not, for KongLicenses; the schemas
// of KongCustomEntity types); without it, no license is rendered and custom entities are
// reported as having no schema.
//
// --kong-version, --router-flavor and --feature-gates make the output what the controller
// sends to such a Kong with those gates (--feature-gates is the controller's flag, read by
// the same parser and mapped to translation as the controller maps it,
// manager.TranslatorOptions): the router as the gateways say it in GET /, the version as
// GET / says it. Without --kong-version, what depends on the version is rendered as KIC's
// golden tests render it (no redirect plugin, no sticky-sessions check); without
// --router-flavor, for the traditional router with PCRE's regexes, as the controller does
// before any gateway answered.
func runTranslate(ctx context.Context, args []string, stdout io.Writer) error {
	fs := commandFlagSet("translate")
	fs.SetOutput(helpOutput(args, stdout, translateStderr))
	var files fileList
	fs.Var(&files, "f", "manifest file or directory (*.yaml, *.yml, *.json, recursively); repeatable")
	fs.Var(&files, "filename", "same as -f")
	class := fs.String("ingress-class", store.DefaultIngressClass, "ingress class to serve")
	output := fs.String("output", "yaml", "output format: yaml or json")
	fs.StringVar(output, "o", "yaml", "same as --output")
	allowLocal := fs.Bool("allow-local-targets", false, "let Services make Kong connect to loopback, unspecified and link-local addresses, as the controller's flag of that name")
	adminURL := fs.String("kong-admin-url", "", "a Kong Admin API to ask whether it is Kong Enterprise and for custom entity schemas (optional)")
	kongVersion := fs.String("kong-version", "", "the gateways' Kong version, as GET / says it (e.g. 3.9.1); decides the redirect plugin (3.9+) and sticky sessions (3.11+)")
	routerFlavor := fs.String("router-flavor", "", "the gateways' router_flavor: traditional, traditional_compatible or expressions (default: as before any gateway answered, traditional)")
	featureGates := fs.String("feature-gates", "", "the controller's --feature-gates (Name=true|false, comma-separated)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("translate: unexpected arguments: %v", fs.Args())
	}
	if len(files) == 0 {
		return errors.New("translate: at least one -f FILE|DIR is required")
	}
	if *output != "yaml" && *output != "json" {
		return fmt.Errorf("translate: --output must be yaml or json, not %q", *output)
	}

	loaded, err := manifest.LoadAll(files...)
	if err != nil {
		return fmt.Errorf("translate: %w", err)
	}
	for _, s := range loaded.Skipped {
		fmt.Fprintln(translateStderr, s)
	}
	st, err := store.NewForObjects(loaded.Objects, store.Options{IngressClass: *class})
	if err != nil {
		return fmt.Errorf("translate: %w", err)
	}
	snap, err := st.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("translate: %w", err)
	}
	gates, err := config.ParseFeatureGates(*featureGates)
	if err != nil {
		return fmt.Errorf("translate: --feature-gates: %w", err)
	}
	// The controller's mapping of its settings to translation, with only the gates and
	// --allow-local-targets of its flags; no clock, so CA certificates are not checked for
	// expiry.
	opts := manager.TranslatorOptions(&config.Config{FeatureGates: gates, AllowLocalTargets: *allowLocal}, time.Time{})
	switch *routerFlavor {
	case "", "traditional", "traditional_compatible", "expressions":
	default:
		return fmt.Errorf("translate: --router-flavor must be traditional, traditional_compatible or expressions, not %q", *routerFlavor)
	}
	// The gateways' answer goes through the record the controller keeps of them, which
	// decides the router's rendering and the version as it does for the sync loop.
	flavors := dataplane.NewRouterFlavors(nil)
	if *routerFlavor != "" || *kongVersion != "" {
		if *kongVersion != "" {
			if _, err := dataplane.ParseKongVersion(*kongVersion); err != nil {
				return fmt.Errorf("translate: --kong-version: %w", err)
			}
		}
		flavors.ReportRoot("translate", dataplane.Root{RouterFlavor: *routerFlavor, Version: *kongVersion})
	}
	opts.ExpressionRoutes = flavors.Expressions()
	opts.RustRegexes = flavors.RustRegexes()
	opts.KongVersion = flavors.KongVersion()
	if *adminURL != "" {
		c, err := kong.NewClient(kong.String(*adminURL), nil)
		if err != nil {
			return fmt.Errorf("translate: --kong-admin-url: %w", err)
		}
		facts := dataplane.NewGatewayFacts(func() []*kong.Client { return []*kong.Client{c} })
		opts.Enterprise, opts.EntitySchemas = facts.Learn(ctx, translator.CustomEntityTypes(snap))
	}
	state, problems := translator.Translate(snap, opts)
	for _, p := range problems {
		fmt.Fprintln(translateStderr, p.String())
	}
	out, err := state.DeclarativeConfig()
	if err != nil {
		return fmt.Errorf("translate: rendering: %w", err)
	}
	if *output == "yaml" {
		if out, err = sigsyaml.JSONToYAML(out); err != nil {
			return fmt.Errorf("translate: rendering: %w", err)
		}
	} else {
		out = append(out, '\n')
	}
	_, err = stdout.Write(out)
	return err
}
