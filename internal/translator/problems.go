package translator

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/objgraph"
)

// Problems: what could not be translated, named by object and field, in a stable order.

// Problem is one thing that could not be translated. It becomes a Warning Event on Object
// (reason KongConfigurationTranslationFailed, translation-rules.md §12.1).
type Problem struct {
	Object kongstate.ObjectRef
	// Field is the path of the offending field, e.g. spec.rules[0].http.paths[1].path, or "".
	Field   string
	Message string
	// Warning marks a problem that leaves nothing out: translation did what the object
	// asks, and says what deserves a look (the admission webhook warns rather than refuses).
	Warning bool
}

// String is "Kind ns/name: field: message".
func (p Problem) String() string {
	if p.Field == "" {
		return p.Object.String() + ": " + p.Message
	}
	return p.Object.String() + ": " + p.Field + ": " + p.Message
}

func (b *builder) problem(obj client.Object, gvk schema.GroupVersionKind, field, format string, args ...any) {
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	b.problems = append(b.problems, Problem{Object: kongstate.RefFor(obj, gvk), Field: field, Message: msg})
}

// sortProblems orders problems by object, field and message and drops exact duplicates (the
// same failure found through several paths of one Ingress is one Event).
func sortProblems(ps []Problem) []Problem {
	sort.SliceStable(ps, func(i, j int) bool {
		a, c := ps[i], ps[j]
		if na, nc := objgraph.Key(a.Object), objgraph.Key(c.Object); na != nc {
			return objgraph.RefLess(na, nc)
		}
		if a.Field != c.Field {
			return fieldLess(a.Field, c.Field)
		}
		return a.Message < c.Message
	})
	out := ps[:0]
	for i, p := range ps {
		if i > 0 && p == ps[i-1] {
			continue
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// fieldLess compares field paths so that paths[2] sorts before paths[10].
func fieldLess(a, b string) bool {
	for a != "" && b != "" {
		ia, ib := strings.IndexAny(a, "0123456789"), strings.IndexAny(b, "0123456789")
		if ia != ib || ia < 0 || a[:ia] != b[:ib] {
			return a < b
		}
		na, ra := splitNum(a[ia:])
		nb, rb := splitNum(b[ib:])
		if len(na) != len(nb) {
			return len(na) < len(nb)
		}
		if na != nb {
			return na < nb
		}
		a, b = ra, rb
	}
	return a < b
}

func splitNum(s string) (string, string) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i], s[i:]
}
