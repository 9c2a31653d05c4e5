package kongstate

import (
	"strings"
	"testing"

	"github.com/google/uuid"
)

// TestIDIsUUIDv5 holds id, which hashes on the stack, to uuid.NewSHA1 of the type's namespace
// and "workspace/key", for keys shorter and longer than its buffer.
func TestIDIsUUIDv5(t *testing.T) {
	for _, typ := range []string{typeServices, typeRoutes, typeConsumers, typeConsumerGroups, typeVaults, typePlugins} {
		for _, workspace := range []string{"", "team-a"} {
			for _, key := range []string{"", "default.echo.80", strings.Repeat("long-name.", 40), "ünïcode.ключ"} {
				full := key
				if workspace != "" {
					full = workspace + "/" + key
				}
				want := uuid.NewSHA1(typeNamespaces[typ], []byte(full)).String()
				if got := id(typ, workspace, key); got != want {
					t.Errorf("id(%q, %q, %q) = %s, uuid.NewSHA1 gives %s", typ, workspace, key, got, want)
				}
			}
		}
	}
}

// TestIDAllocatesOnlyItsString: the hash works on the stack; the ID's string is the one
// allocation.
func TestIDAllocatesOnlyItsString(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = id(typeRoutes, "ws", "default.ingress-1.echo.example.com.80") }); n != 1 {
		t.Errorf("id allocates %v times, want 1", n)
	}
}
