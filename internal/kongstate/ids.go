package kongstate

import (
	"crypto/sha1"

	"github.com/google/uuid"
)

// namespaceRoot is KIC's root namespace for deterministic IDs (translation-rules.md §6). Every
// entity type derives its own namespace from it, so the same key in two types never collides.
var namespaceRoot = uuid.MustParse("fd02801f-0957-4a15-a55a-c8d9606f30b5")

// Entity type names, as KIC passes them to the type namespace derivation.
const (
	typeServices  = "services"
	typeRoutes    = "routes"
	typeConsumers = "consumers"
	// typeConsumersByCustomID is konductor's, not KIC's: KIC gives a consumer with only a
	// custom_id no ID, so its plugins name it by custom_id, which Kong resolves as a username.
	typeConsumersByCustomID = "consumers-by-custom-id"
	// typeCustomEntities is konductor's too: KIC gives custom entities no ID.
	typeCustomEntities = "custom-entities"
	typeConsumerGroups = "consumergroups"
	typeVaults         = "vaults"
	typePlugins        = "plugins"
	// typeCACertificates is konductor's: the id of a CA certificate from a ConfigMap that a
	// BackendTLSPolicy names without an id of its own (KIC requires data.id).
	typeCACertificates = "ca-certificates"
)

var typeNamespaces = func() map[string]uuid.UUID {
	m := map[string]uuid.UUID{}
	for _, t := range []string{typeServices, typeRoutes, typeConsumers, typeConsumersByCustomID, typeCustomEntities, typeConsumerGroups, typeVaults, typePlugins, typeCACertificates} {
		m[t] = uuid.NewSHA1(namespaceRoot, []byte(t))
	}
	return m
}()

// id is uuid.NewSHA1(typeNamespaces[typ], workspace/key).String(), hashed from a buffer on the
// stack: uuid.NewSHA1 allocates its hash, its sum and the key's bytes, and a full translation
// makes an ID for every route and service (a million allocations a second at 3,000 Ingresses
// before, issue #13 start). TestIDIsUUIDv5 holds it to uuid.NewSHA1.
func id(typ, workspace, key string) string {
	ns := typeNamespaces[typ]
	var buf [160]byte
	data := append(buf[:0], ns[:]...)
	if workspace != "" {
		data = append(append(data, workspace...), '/')
	}
	data = append(data, key...)
	sum := sha1.Sum(data)
	var u uuid.UUID
	copy(u[:], sum[:])
	u[6] = (u[6] & 0x0f) | 0x50 // version 5: SHA-1
	u[8] = (u[8] & 0x3f) | 0x80 // RFC 4122 variant
	return u.String()
}

// ServiceID is the ID KIC gives the Kong service of that name in workspace ("" for none).
func ServiceID(workspace, name string) string { return id(typeServices, workspace, name) }

// RouteID is the ID KIC gives the route of that name.
func RouteID(workspace, name string) string { return id(typeRoutes, workspace, name) }

// ConsumerID is the ID KIC gives a consumer with that username.
func ConsumerID(workspace, username string) string { return id(typeConsumers, workspace, username) }

// CustomEntityID is the ID konductor gives a custom entity of entity type typ whose schema has
// an id field and whose KongCustomEntity sets none: key names the KongCustomEntity and which
// of its entities this is. Custom entities have no tags, so the ID is how an entity Kong
// refuses is known to be this object's (never by fields another object could copy).
func CustomEntityID(workspace, typ, key string) string {
	return id(typeCustomEntities, workspace, typ+"/"+key)
}

// ConsumerIDByCustomID is the ID konductor gives a consumer that has a custom_id and no
// username (KIC gives it none). Its plugins name it by this ID: Kong resolves a plugin's
// consumer by ID or username, never by custom_id, so naming it by custom_id would either be
// refused or land on another consumer whose username is that value (docs/security.md).
func ConsumerIDByCustomID(workspace, customID string) string {
	return id(typeConsumersByCustomID, workspace, customID)
}

// ConsumerGroupID is the ID KIC gives the consumer group of that name.
func ConsumerGroupID(workspace, name string) string { return id(typeConsumerGroups, workspace, name) }

// VaultID is the ID KIC gives the vault with that prefix.
func VaultID(workspace, prefix string) string { return id(typeVaults, workspace, prefix) }

// PluginID is the ID KIC gives a plugin: the key is the plugin name followed by each relation
// that exists, in the order service, route, consumer, consumer group (translation-rules.md §6).
// Relations are given by name; empty means "no such relation".
func PluginID(workspace, plugin, service, route, consumer, consumerGroup string) string {
	key := plugin
	if service != "" {
		key += ":service/" + service
	}
	if route != "" {
		key += ":route/" + route
	}
	if consumer != "" {
		key += ":consumer/" + consumer
	}
	if consumerGroup != "" {
		key += ":consumer_group/" + consumerGroup
	}
	return id(typePlugins, workspace, key)
}

// CACertificateID is the id konductor gives the CA certificate of the ConfigMap
// namespace/name when a BackendTLSPolicy names it and it has no data.id: stable across
// translations and controllers writing one workspace.
func CACertificateID(workspace, namespace, name string) string {
	return id(typeCACertificates, workspace, namespace+"/"+name)
}
