package kongrouter

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"

	"github.com/konductor/konductor/internal/kongrules"
)

// The ATC router's matching (Kong/atc-router: src/interpreter.rs, src/router.rs), over the
// expression trees kongrules parses.

// atcValue is a value of a request field in the router's context.
type atcValue struct {
	str string
	num int64
	ip  netip.Addr
}

// atcContext holds the request's field values, each field possibly several times (a header
// sent twice, a repeated query argument).
type atcContext map[string][]atcValue

// atcMatch is what a matcher recorded while it matched: the value each field matched (the right
// side of ==, ^= and =^, the whole match of ~) and a regex's captures.
type atcMatch struct {
	matches  map[string]string
	captures map[string]string
}

func (m *atcMatch) reset() {
	clear(m.matches)
	clear(m.captures)
}

// matcher is a compiled expression.
type matcher struct {
	root   *kongrules.ATCNode
	preds  map[*kongrules.ATCPredicate]*compiledPredicate
	fields []string // every field it reads, for filling the context
}

type compiledPredicate struct {
	lower, any bool
	re         *regexp.Regexp
}

// compileMatcher parses expr for the subsystem and compiles its regexes. The error is the one
// Kong's router gives when it refuses the matcher.
func compileMatcher(expr string, stream bool) (*matcher, error) {
	root, err := kongrules.ParseExpression(expr, stream)
	if err != "" {
		return nil, fmt.Errorf("%s", err)
	}
	m := &matcher{root: root, preds: map[*kongrules.ATCPredicate]*compiledPredicate{}}
	seen := map[string]bool{}
	var walk func(n *kongrules.ATCNode) error
	walk = func(n *kongrules.ATCNode) error {
		if n == nil {
			return nil
		}
		if n.Op != kongrules.ATCPredicateNode {
			if err := walk(n.Left); err != nil {
				return err
			}
			return walk(n.Right)
		}
		p := n.Predicate
		c := &compiledPredicate{lower: p.Has("lower"), any: p.Has("any")}
		if p.Op == "~" {
			re, err := kongrules.CompileRustRegex(p.Value.Str)
			if err != nil {
				return err
			}
			c.re = re
		}
		m.preds[p] = c
		if !seen[p.Field] {
			seen[p.Field] = true
			m.fields = append(m.fields, p.Field)
		}
		return nil
	}
	if err := walk(root); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *matcher) execute(ctx atcContext, res *atcMatch) bool {
	return m.eval(m.root, ctx, res)
}

func (m *matcher) eval(n *kongrules.ATCNode, ctx atcContext, res *atcMatch) bool {
	switch n.Op {
	case kongrules.ATCAnd:
		return m.eval(n.Left, ctx, res) && m.eval(n.Right, ctx, res)
	case kongrules.ATCOr:
		return m.eval(n.Left, ctx, res) || m.eval(n.Right, ctx, res)
	case kongrules.ATCNot:
		return !m.eval(n.Left, ctx, res)
	}
	return m.predicate(n.Predicate, ctx, res)
}

// predicate is interpreter.rs's Predicate::execute: without any(), every value of the field must
// match (and there must be one); with any(), one is enough. A field without values never
// matches, not even "!=".
func (m *matcher) predicate(p *kongrules.ATCPredicate, ctx atcContext, res *atcMatch) bool {
	values, ok := ctx[p.Field]
	if !ok {
		return false
	}
	c := m.preds[p]
	for _, v := range values {
		if c.lower {
			v.str = strings.ToLower(v.str)
		}
		matched := false
		switch p.Op {
		case "==":
			if equalValue(p.Value, v) {
				res.matches[p.Field] = p.Value.Str
				matched = true
			}
		case "!=":
			matched = !equalValue(p.Value, v)
		case "~":
			if loc := c.re.FindStringSubmatchIndex(v.str); loc != nil {
				res.matches[p.Field] = v.str[loc[0]:loc[1]]
				names := c.re.SubexpNames()
				for i := 0; 2*i < len(loc); i++ {
					if loc[2*i] < 0 {
						continue
					}
					group := v.str[loc[2*i]:loc[2*i+1]]
					res.captures[fmt.Sprint(i)] = group
					if names[i] != "" {
						res.captures[names[i]] = group
					}
				}
				matched = true
			}
		case "^=":
			if strings.HasPrefix(v.str, p.Value.Str) {
				res.matches[p.Field] = p.Value.Str
				matched = true
			}
		case "=^":
			if strings.HasSuffix(v.str, p.Value.Str) {
				res.matches[p.Field] = p.Value.Str
				matched = true
			}
		case ">":
			matched = v.num > p.Value.Int
		case ">=":
			matched = v.num >= p.Value.Int
		case "<":
			matched = v.num < p.Value.Int
		case "<=":
			matched = v.num <= p.Value.Int
		case "in":
			matched = p.Value.CIDR.Contains(v.ip)
		case "not in":
			matched = !p.Value.CIDR.Contains(v.ip)
		case "contains":
			matched = strings.Contains(v.str, p.Value.Str)
		}
		if matched && c.any {
			return true
		}
		if !matched && !c.any {
			return false
		}
	}
	return !c.any && len(values) > 0
}

func equalValue(lit kongrules.ATCValue, v atcValue) bool {
	switch lit.Type {
	case kongrules.ATCString:
		return lit.Str == v.str
	case kongrules.ATCInt:
		return lit.Int == v.num
	case kongrules.ATCIP:
		return lit.IP == v.ip
	}
	return false
}
