// Package kongrules holds what Kong 3.x accepts for entity fields, read out of Kong's schema
// (kong/db/schema/typedefs.lua, entities/routes.lua; kong-admin-api.md §3). The translator
// uses it to leave out what Kong would refuse, so that one bad Ingress does not make Kong
// reject the whole configuration; the Admin API emulator (kongemu) uses it to refuse it.
//
// Each check returns Kong's exact error message, "" when the value is valid. The checks whose
// callers word their messages differently (paths, hosts, SNIs) return a Fault, which also
// names the Rule broken.
package kongrules
