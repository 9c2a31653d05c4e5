package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/konductor/konductor/internal/explain"
	"github.com/konductor/konductor/internal/kongrouter"
	"github.com/konductor/konductor/internal/store"
)

// explainStderr is where runExplain reports what it skipped; a variable so tests can capture it.
var explainStderr io.Writer = os.Stderr

// header checks a -H value, 'Name: value'.
func header(v string) ([]string, error) {
	name, _, ok := strings.Cut(v, ":")
	if name = strings.TrimSpace(name); !ok || name == "" || strings.ContainsAny(name, " \t") {
		return nil, fmt.Errorf("a header is 'Name: value', not %q", v)
	}
	return []string{v}, nil
}

// commaSeparated splits a value of a comma-separated list flag (--watch-namespace).
func commaSeparated(v string) ([]string, error) {
	var out []string
	for _, x := range strings.Split(v, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out, nil
}

// runExplain explains which route takes a request, why, and what it came from:
//
//	konductor explain URL [-X METHOD] [-H 'Name: value' ...] [--sni NAME] [--source-ip IP]
//	    (-f FILE|DIR ... | --kubeconfig FILE | --from-controller URL)
//	    [--router-flavor F] [--kong-version V] [--feature-gates G] [--ingress-class C]
//	    [--watch-namespace NS] [-o text|json|yaml]
//	konductor explain --all-conflicts (-f ... | --kubeconfig ... | --from-controller ...)
//
// The configuration is translated from manifests (as `konductor translate`), or from the
// cluster's objects as the controller reads them (the current kubeconfig context unless
// --kubeconfig names one: what `kubectl konductor explain` does), or it is the configuration a
// running controller last sent (its diagnostics server, --dump-config). Flags and the URL may
// come in any order, as kubectl takes them.
func runExplain(ctx context.Context, args []string, stdout io.Writer) error {
	fs := commandFlagSet("explain")
	fs.SetOutput(helpOutput(args, stdout, explainStderr))
	var files fileList
	headers := &listFlag{parse: header}
	namespaces := &listFlag{parse: commaSeparated}
	fs.Var(&files, "f", "manifest file or directory (*.yaml, *.yml, *.json, recursively); repeatable")
	fs.Var(&files, "filename", "same as -f")
	method := fs.String("X", "GET", "the request's method")
	fs.StringVar(method, "request", "GET", "same as -X")
	fs.Var(headers, "H", "a request header, 'Name: value'; repeatable")
	fs.Var(headers, "header", "same as -H")
	sni := fs.String("sni", "", "the TLS server name (https URLs; default the URL's host)")
	sourceIP := fs.String("source-ip", "", "the client's address (default 127.0.0.1)")
	kubeconfig := fs.String("kubeconfig", "", "read the cluster's objects with this kubeconfig (default: the current context of $KUBECONFIG or ~/.kube/config)")
	apiServerHost := fs.String("apiserver-host", "", "the Kubernetes API server's URL, as the controller's flag")
	fs.Var(namespaces, "watch-namespace", "namespaces the controller watches (comma-separated; default all), as the controller's flag")
	fromController := fs.String("from-controller", "", "a running controller's diagnostics server (http://host:10256): explain the configuration it last sent")
	allConflicts := fs.Bool("all-conflicts", false, "instead of a request: every route that can never win (another takes all it matches) and every host routes of several namespaces share")
	output := fs.String("output", "text", "output format: text, json or yaml")
	fs.StringVar(output, "o", "text", "same as --output")
	tf := addTranslationFlags(fs)
	fs.Lookup("router-flavor").Usage = "the gateways' router_flavor: traditional_compatible (default, Kong's since 3.0) or expressions; traditional is translated for and explained with traditional_compatible's matching"
	positional, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if *allConflicts && len(positional) > 0 {
		return fmt.Errorf("explain: --all-conflicts takes no request URL, not %v", positional)
	}
	if !*allConflicts && len(positional) != 1 {
		return fmt.Errorf("explain: give one request URL (konductor explain http://example.com/path), not %d arguments", len(positional))
	}
	if *output != "text" && *output != "json" && *output != "yaml" {
		return fmt.Errorf("explain: --output must be text, json or yaml, not %q", *output)
	}
	if len(files) > 0 && *fromController != "" {
		return errors.New("explain: -f and --from-controller are two sources of configuration: give one")
	}
	if *tf.routerFlavor == "" {
		// Kong's default router since 3.0, where the controller's translation awaits the
		// gateways' answer.
		*tf.routerFlavor = string(kongrouter.TraditionalCompatible)
	}
	var req explain.Request
	if !*allConflicts {
		req = explain.Request{URL: positional[0], Method: *method, Header: http.Header{}, SNI: *sni, SourceIP: *sourceIP}
		for _, h := range headers.values {
			name, value, _ := strings.Cut(h, ":")
			req.Header.Add(strings.TrimSpace(name), strings.TrimSpace(value))
		}
		if _, _, err := explain.ParseRequest(req); err != nil {
			return err
		}
	}
	var in explain.Input
	switch {
	case *fromController != "":
		in, err = controllerInput(ctx, *fromController, kongrouter.Flavor(*tf.routerFlavor))
	case len(files) > 0:
		var st *store.Store
		if st, err = manifestStore(files, store.Options{IngressClass: *tf.class, Namespaces: namespaces.values}, explainStderr); err == nil {
			in, err = translatedInput(ctx, tf, st)
		}
	default:
		var st *store.Store
		if st, err = clusterStore(*kubeconfig, *apiServerHost, store.Options{IngressClass: *tf.class, Namespaces: namespaces.values}); err == nil {
			in, err = translatedInput(ctx, tf, st)
		}
	}
	if err != nil {
		return fmt.Errorf("explain: %w", err)
	}
	e, err := explain.New(in)
	if err != nil {
		return err
	}
	if *allConflicts {
		c := e.Conflicts()
		return writeAs(stdout, *output, c, c.Text)
	}
	x, err := e.Explain(req)
	if err != nil {
		return err
	}
	return writeAs(stdout, *output, x, x.Text)
}

// writeAs writes v as JSON, YAML, or with its text writer.
func writeAs(w io.Writer, format string, v any, text func(io.Writer) error) error {
	if format == "text" {
		return text(w)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if format == "yaml" {
		if b, err = sigsyaml.JSONToYAML(b); err != nil {
			return err
		}
	} else {
		b = append(b, '\n')
	}
	_, err = w.Write(b)
	return err
}

// parseInterspersed parses flags wherever they are among the positional arguments (the flag
// package stops at the first), and returns the positional ones; "--" ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// translatedInput translates the store's objects for the flags' gateways, and keeps the
// objects and problems explain reads sources from.
func translatedInput(ctx context.Context, tf *translationFlags, st *store.Store) (explain.Input, error) {
	t, err := tf.translate(ctx, st)
	if err != nil {
		return explain.Input{}, err
	}
	cfg, err := t.state.DeclarativeConfig()
	if err != nil {
		return explain.Input{}, fmt.Errorf("rendering: %w", err)
	}
	flavor := kongrouter.TraditionalCompatible
	if t.opts.ExpressionRoutes {
		flavor = kongrouter.Expressions
	}
	kc, err := kongrouter.ConfigFromDeclarative(flavor, cfg)
	if err != nil {
		return explain.Input{}, err
	}
	in := explain.Input{Config: kc, KongVersion: *tf.kongVersion, Problems: t.problems,
		LegacyRegexDetection: t.opts.EnableLegacyRegexDetection}
	if p := t.snap.IngressClassParameters; p != nil && p.Spec.EnableLegacyRegexDetection {
		in.LegacyRegexDetection = true
	}
	for _, ing := range t.snap.Ingresses {
		in.Objects = append(in.Objects, ing)
	}
	for _, hr := range t.snap.HTTPRoutes {
		in.Objects = append(in.Objects, client.Object(hr))
	}
	return in, nil
}

// controllerInput reads the configuration a running controller last sent, from its
// diagnostics server (KIC's {"hash": ..., "config": ...} at /debug/config/successful), and,
// when its fallback configuration is in force, the objects it left out with the configuration
// Kong refused (/debug/config/fallback and /debug/config/failed).
func controllerInput(ctx context.Context, base string, flavor kongrouter.Flavor) (explain.Input, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return explain.Input{}, fmt.Errorf("--from-controller %q: give the diagnostics server's URL, http://host:port", base)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	at := func(path string) string {
		v := *u
		v.Path = strings.TrimSuffix(u.Path, "/") + path
		return v.String()
	}
	body, ok, err := getDiagnostics(ctx, at("/debug/config/successful"))
	if err != nil {
		return explain.Input{}, err
	}
	if !ok {
		return explain.Input{}, fmt.Errorf("--from-controller: %s has no configuration yet (the controller sent none, or runs without --dump-config)", at("/debug/config/successful"))
	}
	kc, err := dumpedConfig(body, flavor)
	if err != nil {
		return explain.Input{}, fmt.Errorf("--from-controller: %s: %w", at("/debug/config/successful"), err)
	}
	in := explain.Input{Config: kc}
	body, ok, err = getDiagnostics(ctx, at("/debug/config/fallback"))
	if err != nil || !ok {
		// An older controller, or none in force: the configuration alone.
		return in, nil //nolint:nilerr // the fallback is an addition to the answer
	}
	var fb struct {
		Status   string           `json:"status"`
		Broken   []fallbackObject `json:"brokenObjects"`
		Excluded []fallbackObject `json:"excludedObjects"`
	}
	if json.Unmarshal(body, &fb) != nil || fb.Status != "triggered" {
		return in, nil
	}
	for why, objs := range map[string][]fallbackObject{"broken": fb.Broken, "excluded": fb.Excluded} {
		for _, o := range objs {
			in.Fallback = append(in.Fallback, explain.FallbackObject{Source: explain.Source{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}, Why: why})
		}
	}
	if body, ok, err = getDiagnostics(ctx, at("/debug/config/failed")); err == nil && ok {
		in.Refused, _ = dumpedConfig(body, flavor)
	}
	return in, nil
}

// fallbackObject is an object of the diagnostics' fallback answer (KIC's
// FallbackAffectedObjectMeta).
type fallbackObject struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// getDiagnostics GETs one of the diagnostics server's answers; ok is false for 204 (none).
func getDiagnostics(ctx context.Context, u string) ([]byte, bool, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, false, err
	}
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		return nil, false, fmt.Errorf("--from-controller: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<30))
	if err != nil {
		return nil, false, fmt.Errorf("--from-controller: %w", err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return body, true, nil
	case http.StatusNoContent:
		return nil, false, nil
	}
	return nil, false, fmt.Errorf("--from-controller: %s answered %s: %s", u, resp.Status, strings.TrimSpace(string(body)))
}

// dumpedConfig reads a configuration dump ({"hash": ..., "config": ...}).
func dumpedConfig(body []byte, flavor kongrouter.Flavor) (*kongrouter.Config, error) {
	var dump struct {
		Config json.RawMessage `json:"config"`
	}
	if err := json.Unmarshal(body, &dump); err != nil || len(dump.Config) == 0 {
		return nil, errors.New(`not a configuration dump ({"hash": ..., "config": ...})`)
	}
	if strings.Contains(string(dump.Config), `"expression":`) {
		// A configuration with expression routes was rendered for the expressions router.
		flavor = kongrouter.Expressions
	}
	return kongrouter.ConfigFromDeclarative(flavor, dump.Config)
}
