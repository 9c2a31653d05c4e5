package admission

import "strings"

// awaitedObjectPhrases are the translator's words for a reference to an object the cache does
// not hold, or holds but not yet as needed (internal/translator: backends.go, consumers.go,
// plugins.go, tls.go, cacerts.go, upstreams.go; gwbackends.go and httproute.go: a backendRef
// no ReferenceGrant permits yet, an HTTPRoute its Gateway's listeners do not accept yet,
// which KIC's webhook does not judge either and the route's status reports). Such a problem is not a mistake in the reviewed object: `kubectl apply -f dir/`
// creates an Ingress before its Service when the files sort that way, and a KongConsumer before
// its credential Secret. Refusing it would make the order of creation matter, which Kubernetes
// users do not expect and KIC's webhook does not impose; the webhook warns instead.
var awaitedObjectPhrases = []string{
	"not found",
	"does not exist",
	"nonexistent",
	"Failed to fetch the secret",
	"no kubernetes service found",
	"no grant found",
	"no ReferenceGrant",
	"not permitted by any ReferenceGrant",
	"not accepted by Gateway",
}

// awaitsAnotherObject reports whether a problem's message says that an object it refers to
// does not exist (yet).
func awaitsAnotherObject(message string) bool {
	for _, p := range awaitedObjectPhrases {
		if strings.Contains(message, p) {
			return true
		}
	}
	return false
}
