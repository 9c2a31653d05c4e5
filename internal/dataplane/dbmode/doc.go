// Package dbmode syncs a database-backed Kong by difference, the way decK and the Kong Ingress
// Controller do, through github.com/kong/go-database-reconciler:
//
//  1. dump: list the entities that carry the ownership tag (--kong-admin-filter-tag, KIC's
//     managed-by-ingress-controller by default), and nothing else. Entities a person made
//     by hand are never listed, so never compared, updated or deleted (invariant 8).
//  2. build the target: the translator's decK content with the ownership tag as its select
//     tag, so every entity written carries it, and with the IDs of current entities reused
//     for entities of the same name. The translator fills KIC's deterministic IDs, so a Kong
//     that KIC managed is adopted without a single create or delete.
//  3. diff and apply: go-database-reconciler's syncer deletes same-name duplicates, creates
//     and updates parents before children, then deletes children before parents, with at
//     most --kong-admin-concurrency requests in flight.
//
// Licenses (Kong Gateway Enterprise only; an OSS Kong gets no license request) are synced as
// KIC syncs them: go-database-reconciler with IncludeLicenses in both the dump and the
// syncer. Kong's licenses have no tags field and Kong ignores the tags option on them, so the
// dump lists every license, and the diff makes Kong hold exactly the target's: the chosen
// KongLicense's entity (ID UUIDv5 of "KongLicense:<name>", so one KIC wrote is adopted),
// created and its payload updated with PUT /licenses/{id} (go-kong's Licenses.Create, which
// go-database-reconciler calls for both); every other license, one made by hand included,
// is deleted, and with only disabled KongLicenses every license is. With no KongLicense at
// all the translation says nothing of licenses and Kong's are left alone (KIC deletes them
// then too: a license put in by hand would be lost on switching). This is the one exception to
// invariant 8, KIC's behaviour kept so that a switch changes nothing
// (docs/migration-from-kic.md). Only a target translated for Enterprise
// (kongstate.State.LicensesKnown) diffs licenses: one translated before the gateways'
// edition was learned leaves Kong's licenses as they are.
//
// With Options.DumpInterval 0 every sync starts from a fresh dump: nothing learned from Kong
// is kept across syncs except what cannot go stale while the Kong version stays the same (the
// version itself and the entity schemas, which the schema cache drops when GET / reports
// another version). With a DumpInterval (--kong-admin-dump-interval, 5 minutes by default) a
// sync diffs against what Kong confirmed to the last sync instead, and dumps only on a start,
// after a failure or a refusal, and once the last dump is that old (known.go): a change then
// costs its writes, not a listing of every entity; and when only services and upstreams
// changed (an Ingress, a Service, endpoints), only those are diffed (patch.go). A Kong that
// holds none of the controller's services and upstreams (a first install, a restored empty
// database) is filled in batches of them rather than by one whole diff (fill.go). The dump
// repairs any drift (an entity deleted by hand, a restored database). Prepare (prepare.go) does a sync's
// work but the writes ahead of time, for a standby about to lead; the sync that follows still
// dumps Kong and uses that work only if Kong answered that dump exactly as before.
//
// Failures: the syncer stops at the first failed request, so a sync can be half-applied.
// Sync then returns an error and the loop retries it with backoff; the next sync dumps the
// half-applied state and completes it. When Kong refuses entities as invalid (4xx), the
// objects they came from (their k8s-* tags) are left out and the same Sync runs again, at
// most maxPasses times, so that one bad object does not hold back every other change
// (invariant 5). A refused object's entities are left out of both the target and the
// current state, so Kong keeps their last good version; dependents follow the rules of
// isolate.go. Before the first write, the plugins a sync would create or change are checked
// by Kong's validator (validate.go), so that a refused plugin's route is never written
// without it. Sync then returns a *dataplane.RejectedError naming every refused object. A
// refused entity whose tags name no object cannot be left out: its rejection is returned
// after the pass that met it.
package dbmode
