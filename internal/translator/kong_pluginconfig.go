package translator

import (
	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/store"
)

// PluginEntity is the Kong plugin that a KongPlugin or KongClusterPlugin stands for, before
// it is attached anywhere: its name, its configuration as translation builds it (config,
// configFrom and configPatches resolved against snap's Secrets), protocols, run_on, ordering
// and enabled. It is nil, with the problems found, when the configuration cannot be built,
// and nil without problems for any other kind of object.
//
// Translation only builds the configuration of plugins something refers to; the admission
// webhook needs it for every plugin, to check it against Kong's schema before it is stored.
func PluginEntity(snap *store.Snapshot, obj client.Object) (*kong.Plugin, []Problem) {
	if snap == nil {
		snap = &store.Snapshot{}
	}
	b := &builder{snap: snap, secrets: map[string]*corev1.Secret{}, graph: objgraph.New(), parts: &resultParts{}}
	for _, s := range snap.Secrets {
		if s != nil {
			b.secrets[s.Namespace+"/"+s.Name] = s
		}
	}
	var p *pluginSource
	switch o := obj.(type) {
	case *kongv1.KongPlugin:
		p = b.pluginFromKongPlugin(o)
	case *kongv1.KongClusterPlugin:
		p = b.pluginFromClusterPlugin(o)
	default:
		return nil, nil
	}
	if p == nil {
		return nil, sortProblems(b.problems)
	}
	fp := &file.FPlugin{Plugin: kong.Plugin{Name: kong.String(p.name)}}
	b.fillPlugin(fp, p)
	return &fp.Plugin, nil
}
