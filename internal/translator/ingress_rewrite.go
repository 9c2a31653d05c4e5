package translator

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kong/go-database-reconciler/pkg/file"
	"github.com/kong/go-kong/kong"
)

const annRewrite = "konghq.com/rewrite"

// rewrites applies konghq.com/rewrite (translation-rules.md §3.9, KIC's RewriteURIs gate): every
// route of the Ingress gets a nested request-transformer plugin that replaces the URI. When
// the gate is off or the template is invalid, the failure is reported on the Ingress and the
// whole Kong service holding its routes is left out, routes of other Ingresses included, as
// KIC does.
func (b *builder) rewrites() {
	drop := map[string]bool{}
	for _, n := range b.kongServiceNames() {
		ks := b.kongServices[n]
		for _, r := range ks.routes {
			if r.ing == nil {
				continue
			}
			v, ok := r.ing.Annotations[annRewrite]
			if !ok {
				continue
			}
			if !b.opts.RewriteURIs {
				b.problem(r.ing, gvkIngress, annField(annRewrite), "konghq.com/rewrite annotation not supported when rewrite uris disabled")
				drop[n] = true
				continue
			}
			uri, err := rewriteTemplate(v)
			if err != nil {
				b.problem(r.ing, gvkIngress, annField(annRewrite), "%v", err)
				drop[n] = true
				continue
			}
			r.Plugins = append(r.Plugins, &file.FPlugin{Plugin: kong.Plugin{
				Name:   kong.String("request-transformer"),
				Config: kong.Configuration{"replace": map[string]any{"uri": uri}},
			}})
		}
	}
	names := make([]string, 0, len(drop))
	for n := range drop {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for _, r := range b.kongServices[n].routes {
			delete(b.routeNames, *r.Name)
		}
		delete(b.kongServices, n)
		b.sortedKongServices, b.lastServiceFor = nil, serviceMemo{}
	}
}

// rewriteTemplate turns the annotation into request-transformer's URI template: $N becomes
// $(uri_captures[N]), \$ a literal $, an empty value "/"; any other escape or $ is an error.
func rewriteTemplate(v string) (string, error) {
	if v == "" {
		return "/", nil
	}
	var out strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch c {
		case '\\':
			if i+1 >= len(v) {
				return "", fmt.Errorf("unexpected end of string")
			}
			if v[i+1] != '$' {
				return "", fmt.Errorf("unexpected %c at pos %d", v[i+1], i+1)
			}
			out.WriteByte('$')
			i++
		case '$':
			j := i + 1
			for j < len(v) && v[j] >= '0' && v[j] <= '9' {
				j++
			}
			if j == i+1 {
				if j >= len(v) {
					return "", fmt.Errorf("unexpected end of string")
				}
				return "", fmt.Errorf("unexpected %c at pos %d", v[j], j)
			}
			out.WriteString("$(uri_captures[" + v[i+1:j] + "])")
			i = j - 1
		default:
			out.WriteByte(c)
		}
	}
	return out.String(), nil
}
