package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/kong/go-kong/kong"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/konductor/konductor/internal/config"
	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongstate"
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

// listFlag is a repeatable flag whose values parse checks and splits.
type listFlag struct {
	values []string
	parse  func(string) ([]string, error)
}

func (l *listFlag) String() string { return strings.Join(l.values, ",") }
func (l *listFlag) Set(v string) error {
	vs, err := l.parse(v)
	l.values = append(l.values, vs...)
	return err
}

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
// manager.TranslationOptions): the router as the gateways say it in GET /, the version as
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
	output := fs.String("output", "yaml", "output format: yaml or json")
	fs.StringVar(output, "o", "yaml", "same as --output")
	tf := addTranslationFlags(fs)
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
	st, err := manifestStore(files, store.Options{IngressClass: *tf.class}, translateStderr)
	if err != nil {
		return fmt.Errorf("translate: %w", err)
	}
	t, err := tf.translate(ctx, st)
	if err != nil {
		return fmt.Errorf("translate: %w", err)
	}
	for _, p := range t.problems {
		fmt.Fprintln(translateStderr, p.String())
	}
	out, err := t.state.DeclarativeConfig()
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

// translationFlags are the flags that make a translation the controller's for given gateways
// (translate's, and explain's).
type translationFlags struct {
	class, adminURL, kongVersion, routerFlavor, featureGates *string
	allowLocal                                               *bool
	externalNames                                            *string
}

func addTranslationFlags(fs *flag.FlagSet) *translationFlags {
	return &translationFlags{
		class:         fs.String("ingress-class", store.DefaultIngressClass, "ingress class to serve"),
		allowLocal:    fs.Bool("allow-local-targets", false, "let Services make Kong connect to loopback, unspecified and link-local addresses, as the controller's flag of that name"),
		externalNames: fs.String("externalname-services", config.ExternalNameAllow, "what an ExternalName Service may name: allow, same-namespace or deny, as the controller's flag of that name"),
		adminURL:      fs.String("kong-admin-url", "", "a Kong Admin API to ask whether it is Kong Enterprise and for custom entity schemas (optional)"),
		kongVersion:   fs.String("kong-version", "", "the gateways' Kong version, as GET / says it (e.g. 3.9.1); decides the redirect plugin (3.9+) and sticky sessions (3.11+)"),
		routerFlavor:  fs.String("router-flavor", "", "the gateways' router_flavor: traditional, traditional_compatible or expressions (default: as before any gateway answered, traditional)"),
		featureGates:  fs.String("feature-gates", "", "the controller's --feature-gates (Name=true|false, comma-separated)"),
	}
}

// manifestStore is a store over the objects of manifests, the ones it cannot read named on
// stderr.
func manifestStore(files []string, opts store.Options, stderr io.Writer) (*store.Store, error) {
	loaded, err := manifest.LoadAll(files...)
	if err != nil {
		return nil, err
	}
	for _, s := range loaded.Skipped {
		fmt.Fprintln(stderr, s)
	}
	return store.NewForObjects(loaded.Objects, opts)
}

// translation is a translation's result with what it was made from.
type translation struct {
	snap     *store.Snapshot
	state    *kongstate.State
	problems []translator.Problem
	opts     translator.Options
}

// translate translates the store's objects as the controller would for the flags' gateways.
func (tf *translationFlags) translate(ctx context.Context, st *store.Store) (*translation, error) {
	snap, err := st.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	gates, err := config.ParseFeatureGates(*tf.featureGates)
	if err != nil {
		return nil, fmt.Errorf("--feature-gates: %w", err)
	}
	switch *tf.externalNames {
	case config.ExternalNameAllow, config.ExternalNameSameNamespace, config.ExternalNameDeny:
	default:
		return nil, fmt.Errorf("--externalname-services: %q is not allow, same-namespace or deny", *tf.externalNames)
	}
	switch *tf.routerFlavor {
	case "", "traditional", "traditional_compatible", "expressions":
	default:
		return nil, fmt.Errorf("--router-flavor must be traditional, traditional_compatible or expressions, not %q", *tf.routerFlavor)
	}
	// The gateways' answer goes through the record the controller keeps of them, which
	// decides the router's rendering and the version as it does for the sync loop.
	flavors := dataplane.NewRouterFlavors(nil)
	if *tf.routerFlavor != "" || *tf.kongVersion != "" {
		if *tf.kongVersion != "" {
			if _, err := dataplane.ParseKongVersion(*tf.kongVersion); err != nil {
				return nil, fmt.Errorf("--kong-version: %w", err)
			}
		}
		flavors.ReportRoot("translate", dataplane.Root{RouterFlavor: *tf.routerFlavor, Version: *tf.kongVersion})
	}
	var facts *dataplane.GatewayFacts
	if *tf.adminURL != "" {
		bounded := &http.Client{Transport: dataplane.BoundedAnswers(http.DefaultTransport, dataplane.MaxAdminAnswerBytes, dataplane.MaxAdminPages)}
		c, err := kong.NewClient(kong.String(*tf.adminURL), bounded)
		if err != nil {
			return nil, fmt.Errorf("--kong-admin-url: %w", err)
		}
		facts = dataplane.NewGatewayFacts(func() []*kong.Client { return []*kong.Client{c} })
	}
	// The controller's mapping of its settings to translation (manager.TranslationOptions),
	// with only the gates, --allow-local-targets and --externalname-services of its flags; no
	// clock, so CA certificates are not checked for expiry.
	cfg := &config.Config{FeatureGates: gates, AllowLocalTargets: *tf.allowLocal, ExternalNameServices: *tf.externalNames}
	opts := manager.TranslationOptions(ctx, cfg, manager.Gateways{Flavors: flavors, Facts: facts}, snap, time.Time{})
	state, problems := translator.Translate(snap, opts)
	return &translation{snap: snap, state: state, problems: problems, opts: opts}, nil
}
