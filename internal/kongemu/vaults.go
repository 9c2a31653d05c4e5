package kongemu

import (
	"regexp"
	"strings"

	"github.com/konductor/konductor/internal/kongrules"
)

// vaultConfigs are the config fields of the bundled vaults (kong/vaults/<name>/schema.lua)
// by name; nil: Enterprise vaults, whose config the emulator does not check.
var vaultConfigs = map[string][]*field{
	"env": {
		{Name: "prefix", Type: kongrules.String, Check: matchCheck(`^[A-Za-z_-][A-Za-z0-9_-]*$`)},
		{Name: "base64_decode", Type: kongrules.Boolean, Default: false},
		{Name: "ttl", Type: kongrules.Number, Between: kongrules.Between(0, 100000000)},
		{Name: "neg_ttl", Type: kongrules.Number, Between: kongrules.Between(0, 100000000)},
		{Name: "resurrect_ttl", Type: kongrules.Number, Between: kongrules.Between(0, 100000000)},
	},
	"aws": nil, "gcp": nil, "hcv": nil, "azure": nil, "conjur": nil,
}

// vaultNames lists the vaults a Kong of profile p bundles (env only in Kong OSS).
func vaultNames(p profile) []string {
	if !p.enterprise {
		return []string{"env"}
	}
	return []string{"env", "aws", "gcp", "hcv", "azure", "conjur"}
}

// matchCheck is Kong's match constraint (a Lua pattern, here as the equivalent regexp).
func matchCheck(re string) func(v any) any {
	rx := regexp.MustCompile(re)
	return func(v any) any {
		if !rx.MatchString(v.(string)) {
			return "invalid value: " + v.(string)
		}
		return ""
	}
}

// checkVaultPrefix: a prefix is the host part of vault://<prefix>/<secret> references.
var checkVaultPrefix = matchCheck(`^[a-z][a-z0-9-]*[a-z0-9]$`)

// vaultSubschema returns the vault entity's fields for the vault named in e, its checks,
// or Kong's error for a vault that is not installed.
func vaultSubschema(p profile, s *schema, name string) ([]*field, []entityCheck, string) {
	names := vaultNames(p)
	known := false
	for _, n := range names {
		known = known || n == name
	}
	if !known {
		return s.fieldsFor(p), nil, "vault '" + name + "' is not installed"
	}
	fs := append([]*field(nil), s.fieldsFor(p)...)
	for i, f := range fs {
		if f.Name == "config" {
			fs[i] = &field{Name: "config", Type: kongrules.Record, Required: true, Default: map[string]any{},
				Fields: vaultConfigs[name]}
		}
	}
	notOneOf := func(e map[string]any) ([]string, map[string]any) {
		for _, n := range names {
			if e["prefix"] == n {
				return nil, errTree{"prefix": "must not be one of: " + strings.Join(names, ", ")}
			}
		}
		return nil, nil
	}
	return fs, []entityCheck{notOneOf}, ""
}
