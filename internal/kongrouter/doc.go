// Package kongrouter is Kong Gateway's router as a model: given the routes and services of a
// Kong configuration and a request, it answers which route matches and why, the service the
// request goes to, and the path and Host the upstream receives. It is product code: `konductor
// explain` asks it, and the Kong emulator's proxy (internal/kongemu) routes with it, so neither
// keeps its own copy of Kong's matching rules.
//
// It models Kong 3.x's ATC router (kong/router/atc.lua and Kong/atc-router), which both flavors
// konductor emits use:
//
//   - traditional_compatible: each route's hosts, paths, methods, headers, SNIs, sources and
//     destinations become one ATC expression and one priority (transform.go, after Kong's
//     transform.lua); routes whose paths differ in length are split into one matcher per length
//     (and one for their regexes), as Kong splits them.
//   - expressions: a route's own expression and priority, or the traditional fields' expression
//     with a net.protocol test (expressions.lua).
//
// The router evaluates matchers by priority, then by id, both descending (atc-router's
// BTreeMap walked in reverse), and the first that matches wins (atc.go, router.go). Exec adds
// what atc.lua's exec does around a match: the request path normalized (uri.go, after
// kong/tools/uri.lua), and the upstream path worked out from the service's path, strip_path and
// the matched prefix (path_handling "v0": Kong's ATC routers do not honour "v1").
//
// It is held to Kong's own router tests, restated as data under testdata/kong (README.md
// there); docs/kong-router.md gives the pass count and every known difference.
//
// Files:
//
//	transform.go  route fields -> ATC expression and priority (transform.lua, compat.lua, expressions.lua)
//	atc.go        the ATC interpreter over kongrules' expression trees (interpreter.rs)
//	router.go     building a router (splitting routes by path), Select and Exec (atc.lua)
//	fields.go     the request's facts in the router's context (fields.lua)
//	uri.go        path normalization, escaping, the upstream path (uri.lua, utils.lua)
//	declarative.go a declarative configuration (translate's output, the diagnostics' dump) as a Config
package kongrouter
