// Package kongemu is an in-process emulator of Kong Gateway 3.x's Admin API,
// written to the project's spec (shared/design/kong-admin-api.md, read out of
// Kong's source). Every test that crosses the Admin API talks to it, since
// Kong itself cannot run on the project's machines, and `konductor kongemu`
// serves it as a standalone process.
//
// An Emulator is an http.Handler. New builds one in DB-less mode
// (configuration.database "off": POST /config only, every entity mutation
// answers 405) or database mode ("postgres": entity CRUD with pagination,
// tag filters, endpoint keys, uniqueness, foreign keys and cascades).
// Start, StartTLS and StartWith serve it on a loopback port; with
// Options.AdminToken every request must carry the Kong-Admin-Token header.
//
// Files by concern:
//
//	server.go   Options, Emulator, routing, Start/StartTLS, body parsing
//	node.go     GET /, GET /status, /schemas, /tags, state inspection helpers
//	config.go   DB-less declarative configuration: POST/GET /config, flattened errors
//	crud.go     database mode collections and items, nested endpoints, pagination, tags
//	consumergroups.go  Enterprise consumer group endpoints (group with consumers, memberships)
//	workspaces.go  Enterprise workspaces: /workspaces and every route under /{workspace}/...
//	vaults.go   vault entities and the bundled vaults' config schemas
//	db.go       the in-memory store, foreign keys, uniqueness, cascades, error bodies
//	schema.go   the per-entity schema table that drives defaults, validation, responses and /schemas
//	profile.go  what the version, router flavor and edition change in the schemas
//	plugins.go  the plugins entity per plugin (the plugin schemas are kongrules')
//	rules.go    the schema model and validator, which are kongrules'
//	validate.go Kong's field and entity checks of the entities
//	certs.go    certificate and key checks
//	audit.go    audit log of state changes and request counters
//	form.go     form-encoded bodies
//	faults.go   injected faults (status, latency, dropped connections, config rejection) and Restart
//	listeners.go  proxy_listen and stream_listen parsed as GET / reports them
//	konnect.go  a Konnect control plane over mTLS (core entities, faults, request log), for --konnect-*
//	konnect_v1.go  its /v1 paths: KIC nodes, licenses, consumer group writes
//	konnect_schemas.go  its /v1/schemas/json/{entity} (entity defaults for go-database-reconciler)
//	proxy.go    the proxy: requests routed by internal/kongrouter over the configuration held
//	            at that moment, run through internal/kongplugins, forwarded to a resolver's
//	            backends or over the network; plain and TLS listeners (docs/kong-router.md)
//	echo.go     EchoBackend, an in-process backend answering as the Gateway API echo server
//	stream.go   the stream proxy: stream_listen entries (tcp, ssl with the SNI read as
//	            ssl_preread does, udp) routed by kongrouter's stream router, handed to a
//	            resolver's StreamBackends (tls_passthrough as sent, tls terminated by Kong)
//	echo_stream.go  StreamEchoBackend, answering as the echo server's TCP and UDP modes
//
// One code path validates entities for declarative loading and for CRUD:
// normalize applies defaults, checks types, Kong's constraints and entity
// checks, and renders every field (null where unset, foreign keys as {id}).
//
// # Known differences from Kong
//
//   - Route regex paths ("~/...") are checked with Go's regexp package after
//     rewriting PCRE-only constructs (lookaround, atomic groups, back
//     references, possessive quantifiers, \K \G \Z \h \R, named groups in
//     the (?<n>) and (?'n') forms, repeat counts up to 65535) into RE2
//     equivalents of the same shape. A pattern is rejected only when that
//     rewritten form does not compile, so patterns PCRE accepts are not
//     rejected for using PCRE features; the error text after "PCRE
//     returned:" is Go's, not PCRE's. Exotic constructs (conditionals
//     "(?(...)", recursion "(?R)", callouts, verbs "(*...)") are rejected
//     although PCRE accepts some of them.
//   - Entity bodies may be JSON or form-encoded ("service.id=x",
//     "hosts[]=a", values coerced to the schema's types); Kong also accepts
//     multipart entity bodies, the emulator only for POST /config (its
//     "config" field), which also takes application/yaml and text/yaml.
//   - The configuration hash of a JSON object body is the md5 of Go's
//     canonical re-encoding (sorted keys); Kong hashes its own re-encoding.
//     Both are stable for equal content. As in Kong, check_hash=1 answers
//     304 for every body form whose hash equals the current one.
//   - Plugin schemas (kongrules) cover the bundled plugins KIC users use most;
//     unknown config fields are rejected as Kong does, so a field Kong knows but
//     the emulator lacks is an error, and a plugin without a schema is refused
//     as not enabled.
//   - Declarative keys keys, key_sets, filter_chains and parameters are
//     accepted and ignored.
//   - Enterprise edition (Options.Edition): consumer groups, memberships,
//     consumer-group-scoped plugins, mtls-auth and its credentials, and the
//     Enterprise vault names (their configs are not checked), licenses (the
//     payload's signature is not checked) and degraphql_routes, the custom
//     entity of the degraphql plugin (the plugin itself is not emulated). Membership
//     answers follow Kong 3.5+ ({data, next}); rate-limiting-advanced
//     overrides (/consumer_groups/{g}/overrides) are not emulated.
//   - Enterprise workspaces (workspaces.go): /workspaces CRUD with Kong's rules, and every
//     route but GET / under /{workspace}/... (GET /{workspace}/kong for GET /), each
//     workspace with its own entities (licenses shared); only default in DB-less mode.
//     Not emulated: /workspaces/{ws}/entities and /meta, RBAC, the 400 Kong gives a prefix
//     that is not a valid workspace name (the emulator answers "Workspace '...' not found"),
//     and Kong's own list of reserved workspace names (the emulator reserves the first path
//     segments it routes without a workspace).
//   - Under the expressions router (Options.RouterFlavor) an expression is
//     parsed and type-checked by kongrules.Expression, a parser of the ATC
//     grammar; a "~" pattern is compiled as the Rust regex crate would
//     (kongrules.RustRegex, an approximation: docs/kong-facts.md). Of the traditional
//     fields of a route, under either flavor, the regex paths and header regexes are checked
//     as the expression Kong makes of them (checkTraditionalRegexes); the rest is not turned
//     into an expression.
//   - Listing order is by id (Kong's primary key order in postgres); offsets
//     are opaque but positional.
package kongemu
