package kongemu

import (
	"strconv"
	"strings"

	"github.com/konductor/konductor/internal/kongrules"
)

// profile is what of Kong's configuration changes its schemas: the version (fields and
// values added in later releases), the router flavor (expression routes) and the edition
// (consumer groups and the Enterprise plugins).
type profile struct {
	major, minor int
	flavor       string
	enterprise   bool
}

func newProfile(o Options) profile {
	p := profile{flavor: o.RouterFlavor, enterprise: o.Edition == Enterprise}
	parts := strings.SplitN(o.Version, ".", 3)
	p.major, _ = strconv.Atoi(parts[0])
	if len(parts) > 1 {
		p.minor, _ = strconv.Atoi(parts[1])
	}
	return p
}

// atLeast reports whether the profile's Kong version is major.minor or later.
func (p profile) atLeast(major, minor int) bool {
	return p.major > major || (p.major == major && p.minor >= minor)
}

func (p profile) expressions() bool { return p.flavor == RouterExpressions }

// plugin returns the schema of a plugin this Kong has, or nil.
func (p profile) plugin(name string) *kongrules.PluginSchema {
	kp := kongrules.Plugin(name)
	if kp == nil || (kp.Enterprise && !p.enterprise) {
		return nil
	}
	return kp
}

// gates holds the fields that only some profiles have, by field.
var gates = map[*field]func(profile) bool{}

// gated registers f as present only in the profiles where has is true.
func gated(f *field, has func(profile) bool) *field {
	gates[f] = has
	return f
}

func since(major, minor int) func(profile) bool {
	return func(p profile) bool { return p.atLeast(major, minor) }
}

func before(major, minor int) func(profile) bool {
	return func(p profile) bool { return !p.atLeast(major, minor) }
}

func enterpriseOnly(p profile) bool { return p.enterprise }

func expressionsOnly(p profile) bool { return p.expressions() }

// fieldsFor returns the fields of s that a Kong of profile p has.
func (s *schema) fieldsFor(p profile) []*field {
	out := make([]*field, 0, len(s.Fields))
	for _, f := range s.Fields {
		if has, ok := gates[f]; ok && !has(p) {
			continue
		}
		out = append(out, f)
	}
	return out
}

// has reports whether a Kong of profile p has the entity s.
func (s *schema) has(p profile) bool { return s.Gate == nil || s.Gate(p) }
