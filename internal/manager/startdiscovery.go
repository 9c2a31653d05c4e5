package manager

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/konductor/konductor/internal/store"
)

// At start the controller asks API discovery which optional kinds the cluster serves (their
// informers are registered before the manager starts) and which of Kong's kinds it does not
// translate (a log line). Each is one request per group version; they used to go out one
// after the other, a dozen round trips on the path from start to first push (issue #13).
// Here every group version's request goes out at once.

// installedOptionalKinds is the optional kinds the cluster serves at their own version,
// the set a store without Versions can read (`konductor diff`, through
// InstalledOptionalKinds).
func installedOptionalKinds(cfg *rest.Config) (store.KindSet, error) {
	kinds, versions, err := discoverOptionalKinds(cfg)
	for k := range versions {
		delete(kinds, k)
	}
	return kinds, err
}

// InstalledOptionalKindsAt is the optional kinds the cluster serves and the versions the
// store reads them at (store.Options.Kinds and Versions), as the controller discovers them
// at start.
func InstalledOptionalKindsAt(cfg *rest.Config) (store.KindSet, store.Versions, error) {
	return discoverOptionalKinds(cfg)
}

// discoverOptionalKinds asks which optional kinds the cluster serves, and at which version:
// a kind's own when served, else the first older one served (store.Kind.Versions: TCPRoute,
// UDPRoute and TLSRoute at v1alpha2, BackendTLSPolicy at v1alpha3, as KIC 3.5 reads them).
// Every version's group version is asked at once, older ones included: a cluster that
// serves v1 answers the same number of round trips' worth.
func discoverOptionalKinds(cfg *rest.Config) (store.KindSet, store.Versions, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("discovery client: %w", err)
	}
	byGV := map[string]bool{}
	for _, k := range store.AllKinds() {
		if k.Optional() {
			for _, v := range k.Versions() {
				byGV[schema.GroupVersion{Group: k.GroupVersionKind().Group, Version: v}.String()] = true
			}
		}
	}
	gvs := make([]string, 0, len(byGV))
	for gv := range byGV {
		gvs = append(gvs, gv)
	}
	sort.Strings(gvs)
	answers, errs := eachGroupVersion(gvs, func(gv string) (map[string]bool, error) { return servedResources(dc, gv) })
	served := map[string]map[string]bool{}
	for i, gv := range gvs {
		if errs[i] != nil {
			return nil, nil, errs[i]
		}
		served[gv] = answers[i]
	}
	out, versions := store.KindSet{}, store.Versions{}
	for _, k := range store.AllKinds() {
		if !k.Optional() {
			continue
		}
		if v := firstServed(k, func(gv string) map[string]bool { return served[gv] }); v != "" {
			out[k] = struct{}{}
			if v != k.GroupVersionKind().Version {
				versions[k] = v
			}
		}
	}
	return out, versions, nil
}

// firstServed is the first of k's versions (its own, then older ones) whose group version
// serves k's resource, according to resources; "" when none does.
func firstServed(k store.Kind, resources func(gv string) map[string]bool) string {
	for _, v := range k.Versions() {
		if resources(schema.GroupVersion{Group: k.GroupVersionKind().Group, Version: v}.String())[k.Resource()] {
			return v
		}
	}
	return ""
}

// servedKongKinds lists the kinds of Kong's API groups the cluster serves, top-level resources
// only. Discovery only: it needs no permission on those kinds. Errors are not fatal (the list
// only feeds a log line): a group version that cannot be read is left out.
func servedKongKinds(cfg *rest.Config) []string {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil
	}
	groups, err := dc.ServerGroups()
	if err != nil {
		return nil
	}
	var gvs []string
	for _, g := range groups.Groups {
		if strings.HasSuffix(g.Name, "konghq.com") {
			for _, v := range g.Versions {
				gvs = append(gvs, v.GroupVersion)
			}
		}
	}
	lists, _ := eachGroupVersion(gvs, func(gv string) (*metav1.APIResourceList, error) { return dc.ServerResourcesForGroupVersion(gv) })
	var out []string
	for _, list := range lists {
		if list == nil {
			continue
		}
		for _, r := range list.APIResources {
			if !strings.Contains(r.Name, "/") {
				out = append(out, r.Kind)
			}
		}
	}
	return out
}

// untranslatedKongKinds are the kinds of served (servedKongKinds) that konductor does not
// read, sorted, each once; those switched off (a flag or a gate) are not read on purpose.
func untranslatedKongKinds(served []string, read, off store.KindSet) []string {
	readNames := map[string]bool{}
	for k := range read {
		readNames[k.String()] = true
	}
	for k := range off {
		readNames[k.String()] = true
	}
	seen := map[string]bool{}
	var out []string
	for _, kind := range served {
		if readNames[kind] || seen[kind] {
			continue
		}
		seen[kind] = true
		out = append(out, kind)
	}
	sort.Strings(out)
	return out
}

// eachGroupVersion calls ask for every group version at once and returns the answers and
// errors in the order of gvs.
func eachGroupVersion[T any](gvs []string, ask func(gv string) (T, error)) ([]T, []error) {
	out, errs := make([]T, len(gvs)), make([]error, len(gvs))
	var wg sync.WaitGroup
	for i, gv := range gvs {
		wg.Go(func() { out[i], errs[i] = ask(gv) })
	}
	wg.Wait()
	return out, errs
}

// restMapperFor is the manager's REST mapper (MapperProvider), made before the manager so that
// mapKinds can fill it while an API server gone again is waited for.
func restMapperFor(restCfg *rest.Config) (meta.RESTMapper, error) {
	httpClient, err := rest.HTTPClientFor(restCfg)
	if err != nil {
		return nil, fmt.Errorf("REST mapper client: %w", err)
	}
	return apiutil.NewDynamicRESTMapper(restCfg, httpClient)
}

// askMapper has mapper learn the CRDs' mapping, and so, from an API server that serves
// aggregated discovery, every group's resources in one answer, while the start asks its other
// questions; mapKinds then finds the kinds read in the mapper's cache. The channel receives
// the answer's error.
func askMapper(mapper meta.RESTMapper) <-chan error {
	answer := make(chan error, 1)
	go func() {
		_, err := mapper.RESTMapping(crdGVK.GroupKind(), crdGVK.Version)
		answer <- err
	}()
	return answer
}

// crdsListing is mayListCRDs' answer.
type crdsListing struct {
	listable bool
	err      error
}

// mapKinds asks mapper for the REST mapping of every kind read (at the version it is read
// at) and of the CRDs (each group's discovery once; the mapper keeps what it learnt), so that
// constructing the manager and registering the informers ask the API server nothing more.
func mapKinds(mapper meta.RESTMapper, kinds store.KindSet, versions store.Versions) error {
	gvks := []schema.GroupVersionKind{crdGVK}
	for _, k := range kinds.Sorted() {
		gvks = append(gvks, versions.GroupVersionKind(k))
	}
	for _, gvk := range gvks {
		if _, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			return fmt.Errorf("REST mapping of %s: %w", gvk, err)
		}
	}
	return nil
}
