package translator

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	netv1 "k8s.io/api/networking/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/konductor/konductor/internal/manifest"
)

// IngressPaths reads a route's paths back to the Ingress paths they come from: in every
// golden case, each path of a route an Ingress made is a Kong path of one of that Ingress's
// paths of the route's host and backend.
func TestIngressPathsAreTheRoutesPaths(t *testing.T) {
	checked := 0
	eachGoldenCase(t, func(t *testing.T, dir string) {
		objs, err := manifest.Load(filepath.Join(dir, "in.yaml"))
		require.NoError(t, err)
		opts := readGoldenOptions(t, dir)
		ingresses := map[string]*netv1.Ingress{}
		for _, o := range objs {
			if ing, ok := o.(*netv1.Ingress); ok {
				ingresses[ing.Namespace+"/"+ing.Name] = ing
			}
		}
		out, _ := renderCase(t, dir)
		var cfg struct {
			Services []struct {
				Routes []struct {
					Name  string   `json:"name"`
					Hosts []string `json:"hosts"`
					Paths []string `json:"paths"`
					Tags  []string `json:"tags"`
				} `json:"routes"`
			} `json:"services"`
		}
		require.NoError(t, sigsyaml.Unmarshal([]byte(out), &cfg))
		for _, s := range cfg.Services {
			for _, r := range s.Routes {
				var ns, name, kind string
				for _, tag := range r.Tags {
					k, v, _ := strings.Cut(tag, ":")
					switch k {
					case "k8s-namespace":
						ns = v
					case "k8s-name":
						name = v
					case "k8s-kind":
						kind = v
					}
				}
				ing := ingresses[ns+"/"+name]
				if kind != "Ingress" || ing == nil || len(r.Paths) == 0 || r.Name == ns+"."+name {
					// (namespace.name is the default backend's route.)
					continue
				}
				made := map[string]bool{}
				for _, ip := range IngressPaths(ing, opts.Translator.EnableLegacyRegexDetection) {
					if !slices.Contains(r.Hosts, ip.Host) && (ip.Host != "" || len(r.Hosts) > 0) {
						continue
					}
					for _, kp := range ip.KongPaths {
						made[kp] = true
					}
				}
				for _, p := range r.Paths {
					require.True(t, made[p], "%s: route %s's path %q is no path of Ingress %s/%s", dir, r.Name, p, ns, name)
					checked++
				}
			}
		}
	})
	require.Greater(t, checked, 50)
}
