// Package admission is konductor's validating admission webhook: it refuses, before the API
// server stores it, a change that would make translation leave something out.
//
// The decision is translation itself, not a second set of rules. The incoming object replaces
// its stored version in the current cache snapshot, the snapshot is translated
// (translator.Build), and the review is denied when that translation reports a problem, on
// the object or on an object that depends on it (the Result's Graph), that the snapshot
// without the change did not report. So whatever the translator checks (paths, hosts,
// headers, SNIs, names with Kong's rules; credential conflicts; duplicate vault prefixes;
// missing Secrets...) the webhook checks too, with the same message naming the field, and a
// change that only keeps an existing problem, or fixes one, is never refused.
//
// Plugins are checked beyond translation: their configuration (config, configFrom,
// configPatches resolved) is validated against Kong's schema, the ones konductor knows
// (internal/kongrules) locally, others by a reachable gateway's /schemas/plugins/validate.
//
// The webhook never blocks what it cannot judge: a review that arrives before the cache has
// synced, an object of another ingress class or namespace, a kind konductor does not
// translate, or a plugin no gateway could check, is allowed (with a warning where the user
// should know). It serves on every replica, leader or not: every replica has a warm cache.
package admission
