// Package kongstate is konductor's model of a Kong configuration and its rendering.
//
// The model is built from go-database-reconciler's decK file types (file.FService,
// file.FRoute, file.FUpstream, file.FCertificate, file.FPlugin with go-kong types inside)
// because both data planes consume them: DB-less Kong takes the same document as the JSON
// body of POST /config, and the DB-mode sync engine diffs a file.Content against Kong.
// Keeping one model means the two modes cannot drift apart.
//
// The translator fills a State; Content and DeclarativeConfig render it exactly as the Kong
// Ingress Controller does (translation-rules.md §11): render-time defaults, KIC's sort order (most
// collections descending by name), no _info, and in DB-less mode the stub upstream "kong" for
// an otherwise empty document. Rendering never mutates the State and is byte-for-byte
// deterministic, so a digest of the output tells whether anything changed. The Renderer writes
// services and upstreams with its own encoder (encode.go), whose bytes are encoding/json's.
//
// The package also owns the conventions that tie Kong entities back to Kubernetes objects:
// the k8s-* tags of translation-rules.md §5 (TagsFor, ObjectRefFromTags) and the deterministic
// UUIDv5 IDs of §6, which let konductor adopt entities that KIC created without re-creating
// them.
package kongstate
