// Package diagnostics is KIC's diagnostics server (--diagnostic-server-port, default 10256),
// which runs when --dump-config or --profiling is set, on every replica (it writes nothing;
// only the leader's sync loop feeds it, so a standby answers 204).
//
// With --dump-config it serves, as KIC does (docs/kong-facts.md, "KIC's diagnostics server"):
//
//	/debug/config/successful   {"hash": ..., "config": ...}: the last configuration a gateway took; 204 before one
//	/debug/config/failed       the same for the last configuration a gateway refused; 204 before one
//	/debug/config/fallback     {"status": "triggered"|"not-triggered", "brokenObjects": ..., ...}
//	/debug/config/raw-error    text/plain: the body of a DB-less Kong's last refusal; 204 before one
//	/debug/config/diff-report  KIC's message: its database-mode diffs are not recorded here
//
// and with --profiling net/http/pprof under /debug/pprof/ (the handlers the manager gives).
// With either it serves konductor's /debug/graph?kind=&namespace=&name= (Options.Graph): where
// one object stands, for "a change did not reach Kong" (docs/troubleshooting.md).
//
// The sync loop tells the Recorder (a dataplane.Diagnostics) which target each gateway took
// or refused, and the Recorder keeps a reference to it and nothing more: the configuration is
// read (Target.SentConfig: the bytes the loop rendered for the gateways), hashed and
// redacted when a dump is asked for, never on the sync's path. Without
// --dump-sensitive-config a dump masks, through internal/redact (Redactor.JSON), the
// configuration's credentials, certificates' keys, plugin configuration fields named like
// secrets, and every value of the Secrets its KongPlugins and KongClusterPlugins read
// (configFrom, configPatches); Kong's raw error, which quotes the entities it refused, too.
//
// Keeping a reference keeps that target alive: the last taken and the last refused targets,
// with their State, snapshot and rendered bytes, may be two the loop has moved past.
package diagnostics
