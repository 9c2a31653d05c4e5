// Command localenv is the helper of hack/run-local.sh:
//
//	localenv serve --assets DIR --crds DIR --dir DIR
//	    start etcd and kube-apiserver (controller-runtime's envtest) with the CRDs installed,
//	    write DIR/kubeconfig, print "kubeconfig: PATH", and stop them on SIGINT/SIGTERM, or
//	    when the process that started it is gone.
//	localenv apply --kubeconfig FILE -f DIR
//	    create or update the objects of DIR (for machines without kubectl).
//	localenv kong --url URL
//	    print what a Kong Admin API holds: services, routes, plugins, certificates, upstreams.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/konductor/konductor/internal/manifest"
	"github.com/konductor/konductor/internal/store"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: localenv serve|apply|kong [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "apply":
		err = apply(os.Args[2:])
	case "kong":
		err = kongSummary(os.Args[2:], os.Stdout)
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "localenv:", err)
		os.Exit(1)
	}
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	assets := fs.String("assets", os.Getenv("KUBEBUILDER_ASSETS"), "folder holding etcd and kube-apiserver")
	crds := fs.String("crds", "config/crd", "CRD folder to install")
	dir := fs.String("dir", "", "folder to write the kubeconfig into")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *assets == "" || *dir == "" {
		return errors.New("serve: --assets and --dir are required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	env := &envtest.Environment{
		BinaryAssetsDirectory: *assets,
		CRDDirectoryPaths:     []string{*crds},
		ErrorIfCRDPathMissing: true,
	}
	// Stop etcd and kube-apiserver whatever happens after they started.
	if _, err := env.Start(); err != nil {
		_ = env.Stop()
		return fmt.Errorf("starting etcd and kube-apiserver: %w", err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "localenv: stopping etcd and kube-apiserver:", err)
		}
		fmt.Fprintln(os.Stderr, "localenv: etcd and kube-apiserver stopped")
	}()
	user, err := env.AddUser(envtest.User{Name: "local-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return err
	}
	path := filepath.Join(*dir, "kubeconfig")
	if err := os.WriteFile(path+".tmp", kubeconfig, 0o600); err != nil {
		return err
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return err
	}
	fmt.Printf("kubeconfig: %s\napiserver: %s\n", path, env.Config.Host)

	// If the script that started us dies without a word (SIGKILL), stop anyway: nothing may
	// be left running.
	parent := os.Getppid()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if os.Getppid() != parent {
				fmt.Fprintln(os.Stderr, "localenv: parent process gone; stopping")
				return nil
			}
		}
	}
}

func apply(args []string) error {
	fs := flag.NewFlagSet("apply", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file")
	dir := fs.String("f", "", "manifest file or folder")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: store.Scheme()})
	if err != nil {
		return err
	}
	objs, err := manifest.Load(*dir)
	if err != nil {
		return err
	}
	// Namespaces first.
	sort.SliceStable(objs, func(i, j int) bool { return objs[i].GetNamespace() == "" && objs[j].GetNamespace() != "" })
	ctx := context.Background()
	for _, o := range objs {
		kind := fmt.Sprintf("%T", o)
		err := c.Create(ctx, o)
		if apierrors.IsAlreadyExists(err) {
			cur := o.DeepCopyObject().(client.Object)
			if err = c.Get(ctx, client.ObjectKeyFromObject(o), cur); err == nil {
				o.SetResourceVersion(cur.GetResourceVersion())
				err = c.Update(ctx, o)
			}
		}
		if err != nil {
			return fmt.Errorf("%s %s/%s: %w", kind, o.GetNamespace(), o.GetName(), err)
		}
		fmt.Printf("%s %s/%s applied\n", strings.TrimPrefix(kind, "*"), o.GetNamespace(), o.GetName())
	}
	return nil
}

func kongSummary(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("kong", flag.ContinueOnError)
	url := fs.String("url", "http://127.0.0.1:8001", "Kong Admin API URL")
	token := fs.String("token", os.Getenv("CONTROLLER_KONG_ADMIN_TOKEN"), "Kong-Admin-Token header")
	if err := fs.Parse(args); err != nil {
		return err
	}
	get := func(path string) ([]map[string]any, error) {
		var all []map[string]any
		next := path
		for next != "" {
			req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(*url, "/")+next, nil)
			if err != nil {
				return nil, err
			}
			if *token != "" {
				req.Header.Set("Kong-Admin-Token", *token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return nil, err
			}
			var page struct {
				Data []map[string]any `json:"data"`
				Next *string          `json:"next"`
			}
			err = json.NewDecoder(resp.Body).Decode(&page)
			resp.Body.Close()
			if err != nil {
				return nil, fmt.Errorf("GET %s: %w", next, err)
			}
			all = append(all, page.Data...)
			next = ""
			if page.Next != nil && *page.Next != "" {
				next = *page.Next
			}
		}
		sort.Slice(all, func(i, j int) bool {
			return str(all[i]["name"])+str(all[i]["id"]) < str(all[j]["name"])+str(all[j]["id"])
		})
		return all, nil
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	defer tw.Flush()
	services, err := get("/services")
	if err != nil {
		return err
	}
	svcName := map[string]string{}
	fmt.Fprintf(tw, "SERVICES (%d)\tHOST\tPORT\tPROTOCOL\n", len(services))
	for _, s := range services {
		svcName[str(s["id"])] = str(s["name"])
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", str(s["name"]), str(s["host"]), str(s["port"]), str(s["protocol"]))
	}
	routes, err := get("/routes")
	if err != nil {
		return err
	}
	routeName := map[string]string{}
	fmt.Fprintf(tw, "ROUTES (%d)\tHOSTS\tPATHS\tSERVICE\n", len(routes))
	for _, r := range routes {
		routeName[str(r["id"])] = str(r["name"])
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", str(r["name"]), str(r["hosts"]), str(r["paths"]), svcName[ref(r["service"])])
	}
	upstreams, err := get("/upstreams")
	if err != nil {
		return err
	}
	var targets []map[string]any
	for _, u := range upstreams {
		ts, err := get("/upstreams/" + str(u["id"]) + "/targets")
		if err != nil {
			return err
		}
		for _, t := range ts {
			t["upstream"] = map[string]any{"id": str(u["name"])}
		}
		targets = append(targets, ts...)
	}
	for _, kind := range []string{"plugins", "certificates", "upstreams", "targets"} {
		var items []map[string]any
		switch kind {
		case "upstreams":
			items = upstreams
		case "targets":
			items = targets
		default:
			if items, err = get("/" + kind); err != nil {
				return err
			}
		}
		fmt.Fprintf(tw, "%s (%d)\n", strings.ToUpper(kind), len(items))
		for _, it := range items {
			switch kind {
			case "plugins":
				on := "global"
				for _, k := range []string{"route", "service", "consumer"} {
					if id := ref(it[k]); id != "" {
						on = k + " " + id
						if k == "route" && routeName[id] != "" {
							on = k + " " + routeName[id]
						}
						if k == "service" && svcName[id] != "" {
							on = k + " " + svcName[id]
						}
					}
				}
				fmt.Fprintf(tw, "  %s\t%s\n", str(it["name"]), on)
			case "certificates":
				fmt.Fprintf(tw, "  %s\tsnis %s\n", str(it["id"]), str(it["snis"]))
			case "upstreams":
				fmt.Fprintf(tw, "  %s\n", str(it["name"]))
			case "targets":
				fmt.Fprintf(tw, "  %s\tupstream %s\n", str(it["target"]), ref(it["upstream"]))
			}
		}
	}
	return nil
}

func str(v any) string {
	switch v := v.(type) {
	case nil:
		return "-"
	case string:
		return v
	case float64:
		return fmt.Sprintf("%g", v)
	case []any:
		parts := make([]string, len(v))
		for i, p := range v {
			parts[i] = str(p)
		}
		return strings.Join(parts, ",")
	default:
		return fmt.Sprint(v)
	}
}

func ref(v any) string {
	if m, ok := v.(map[string]any); ok {
		return str(m["id"])
	}
	return ""
}
