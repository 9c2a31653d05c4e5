// Package kongrules holds what Kong 3.x accepts for entity fields, read out of Kong's schema
// (kong/db/schema/typedefs.lua, entities/routes.lua; kong-admin-api.md §3). The translator
// uses it to leave out what Kong would refuse, so that one bad Ingress does not make Kong
// reject the whole configuration; the Admin API emulator (kongemu) uses it to refuse it.
//
// Each check returns Kong's exact error message, "" when the value is valid. The checks whose
// callers word their messages differently (paths, hosts, SNIs) return a Fault, which also
// names the Rule broken.
//
// It also holds Kong's schema model (Field, Validator, error trees in Kong's shape) and the
// schemas of the bundled plugins KIC users use most (kong/plugins/<name>/schema.lua):
// ValidatePluginConfig checks a plugin's config as Kong does, for the translator, the
// emulator and an admission webhook alike.
package kongrules
