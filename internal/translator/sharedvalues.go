package translator

// Values that the fields of many Kong entities point to: one of each for every entity of
// every translation, instead of one per entity (issue #13, memory: the defaults of a Kong
// service were a 112-byte block per service, of a route a 64-byte one; at 3,000 Ingresses the
// Incremental translator keeps every entity between rounds).
//
// They are NEVER written through (`*svc.Retries = 3` would change every service at once, in
// every State still held, while a Renderer may be encoding it). Sharing them is sound
// because nothing writes through an entity's field pointers: a State is read-only once built
// (kongstate.Renderer relies on that too), and code that changes a field replaces its pointer
// (`r.StripPath = kong.Bool(false)`, routeOverrides.apply; `ks.svc.Port = kong.Int(...)`,
// populateServices). Audited for issue #13 in internal/translator, internal/kongstate, the
// dataplane (DB-less and database mode), admission and redact: no assignment through a field
// pointer, no json.Unmarshal into an existing entity (which would reuse its pointers), and
// database mode hands go-database-reconciler deep copies (State.Content), whose file.Get
// fills defaults into them. Take their address only for an entity's field; a new default
// goes here, with the same rule. The same holds for the values shared within one
// translation: an object's entity tags (entitytags.go), a resolved port
// (builder.servicePort), an upstream's name (its service's host).
var (
	sharedHTTP           = "http"
	sharedRootPath       = "/"
	sharedPort80         = 80
	sharedDefaultTimeout = kongDefaultTimeout
	sharedRetries        = 5
	sharedZero           = 0
	sharedTrue           = true
	sharedFalse          = false
)
