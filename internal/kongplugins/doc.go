// Package kongplugins runs the Kong plugins konductor emits as Kong runs them, on one request:
// request-termination, request-transformer, response-transformer, redirect, key-auth,
// basic-auth, acl, cors and ip-restriction, each after its kong/plugins/<name> handler (PRIORITY,
// phases, messages, headers). Kong's plugins iterator decides which configuration of a plugin
// applies (route, service, consumer and their combinations, the consumer known when the plugin
// is reached) and the order (PRIORITY, then name, both descending); a plugin whose access phase
// answers ends the access phase, and every collected plugin's response phases still run.
// Plugins it does not model are passed through and listed (Exchange.Unmodelled).
//
// The Kong emulator's proxy (internal/kongemu) runs it around internal/kongrouter's decisions.
//
// Files: runtime.go (the iterator, phases, Kong's error responses), auth.go (key-auth,
// basic-auth, acl), transformers.go (request- and response-transformer), answers.go
// (request-termination, redirect, cors, ip-restriction), template.go (the Lua expressions of
// request-transformer's templates).
package kongplugins
