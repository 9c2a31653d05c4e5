package kongemu

import (
	"github.com/konductor/konductor/internal/kongrules"
)

// Kong Gateway Enterprise entities that a KongCustomEntity or a KongLicense becomes, with
// their schemas as Kong's source has them:
//   - licenses (kong/db/schema/entities/licenses.lua): id, payload (required), timestamps; no
//     tags. Kong also checks the payload's signature (license_helpers.is_valid_license),
//     which the emulator does not.
//   - degraphql_routes of the degraphql plugin (kong/plugins/degraphql/daos.lua): id, a
//     foreign key to services, methods (default {"GET"}), uri and query (required),
//     timestamps; no tags. It is the custom entity go-database-reconciler knows, and the
//     one the emulator offers for KongCustomEntity tests.
func init() {
	register(&schema{
		Name: "licenses", Singular: "license", Updated: true, Gate: enterpriseOnly,
		Fields: []*field{
			idField(),
			{Name: "payload", Type: kongrules.String, Required: true},
			createdAt(), updatedAt(),
		},
	})
	register(&schema{
		Name: "degraphql_routes", Singular: "degraphql_route", Updated: true, Gate: enterpriseOnly,
		Fields: []*field{
			idField(),
			foreign("service", "services", false, ""),
			{Name: "methods", Type: kongrules.Set, Default: kongrules.Strs("GET"),
				Elem: &field{Type: kongrules.String, Check: kongrules.CheckMethod}},
			{Name: "uri", Type: kongrules.String, Required: true},
			{Name: "query", Type: kongrules.String, Required: true},
			createdAt(), updatedAt(),
		},
	})
	entityOrder = append(entityOrder, "licenses", "degraphql_routes")
}
