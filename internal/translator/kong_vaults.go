package translator

import (
	"encoding/json"
	"sort"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
	kongv1alpha1 "github.com/kong/kubernetes-configuration/api/configuration/v1alpha1"

	"github.com/konductor/konductor/internal/kongstate"
)

// vaults translates KongVaults (translation-rules.md §9.4): {name: backend, prefix, config,
// description, tags, id}. Of several vaults with one prefix the oldest wins (ties by name);
// the others are reported.
func (b *builder) vaults() {
	vaults := append([]*kongv1alpha1.KongVault(nil), b.snap.KongVaults...)
	sort.SliceStable(vaults, func(i, j int) bool {
		ti, tj := vaults[i].CreationTimestamp, vaults[j].CreationTimestamp
		if !ti.Equal(&tj) {
			return ti.Before(&tj)
		}
		return vaults[i].Name < vaults[j].Name
	})
	byPrefix := map[string]*kongv1alpha1.KongVault{} // prefix -> the vault that has it
	for _, v := range vaults {
		if kept := byPrefix[v.Spec.Prefix]; kept != nil {
			b.contend("vault prefix "+v.Spec.Prefix, v, gvkKongVault, kept, gvkKongVault)
			b.problem(v, gvkKongVault, "spec.prefix", "spec.prefix %q is duplicate", v.Spec.Prefix)
			continue
		}
		var config kong.Configuration
		if raw := v.Spec.Config.Raw; len(raw) > 0 && string(raw) != "null" {
			if err := json.Unmarshal(raw, &config); err != nil {
				b.problem(v, gvkKongVault, "spec.config", "failed to parse configuration of vault %q to JSON: %v", v.Name, err)
				continue
			}
		}
		byPrefix[v.Spec.Prefix] = v
		fv := &file.FVault{Vault: kong.Vault{
			ID:     kong.String(kongstate.VaultID(b.opts.Workspace, v.Spec.Prefix)),
			Name:   kong.String(v.Spec.Backend),
			Prefix: kong.String(v.Spec.Prefix),
			Config: config,
			Tags:   b.entityTags(v, gvkKongVault),
		}}
		if v.Spec.Description != "" {
			fv.Description = kong.String(v.Spec.Description)
		}
		b.state.Vaults = append(b.state.Vaults, fv)
	}
}
