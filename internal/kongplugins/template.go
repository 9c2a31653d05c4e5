package kongplugins

import (
	"fmt"
	"strconv"
	"strings"
)

// request-transformer's values are Penlight templates: "$(expr)" is replaced by the Lua
// expression's value ("" for nil or false), with headers, query_params and uri_captures in
// scope (kong/plugins/request-transformer/access.lua). The expressions are Lua's; this evaluator
// takes the part of Lua such templates use: literals, table indexing (a.b, a[1], a['b']),
// comparison (== ~= < > <= >=), concatenation (..), not, and, or, parentheses, type().

// luaValue is a Lua value: nil, bool, float64, string or luaTable.
type luaValue any

// luaTable is a table of strings (headers, query arguments, captures); a key with several
// values is a table of them.
type luaTable func(key luaValue) luaValue

// renderTemplate renders a Penlight template over env.
func renderTemplate(tmpl string, env map[string]luaValue) (string, error) {
	var out strings.Builder
	for {
		i := strings.Index(tmpl, "$(")
		if i < 0 {
			out.WriteString(tmpl)
			return out.String(), nil
		}
		out.WriteString(tmpl[:i])
		end := matchingParen(tmpl, i+1)
		if end < 0 {
			return "", fmt.Errorf("unclosed $( in template")
		}
		v, err := evalLua(tmpl[i+2:end], env)
		if err != nil {
			return "", err
		}
		out.WriteString(luaToString(v))
		tmpl = tmpl[end+1:]
	}
}

// matchingParen is the index of the ")" closing the "(" at open, skipping strings.
func matchingParen(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch c := s[i]; c {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i
			}
		case '"', '\'':
			for i++; i < len(s) && s[i] != c; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		}
	}
	return -1
}

func luaToString(v luaValue) string {
	switch v := v.(type) {
	case nil:
		return ""
	case bool:
		if !v {
			return ""
		}
		return "true"
	case float64:
		if v == float64(int64(v)) {
			return strconv.FormatInt(int64(v), 10)
		}
		return strconv.FormatFloat(v, 'g', 14, 64)
	case string:
		return v
	}
	return fmt.Sprintf("table: %p", v)
}

func truthy(v luaValue) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	}
	return true
}

type luaParser struct {
	toks []string
	pos  int
	env  map[string]luaValue
	// skip is above 0 while an operand "and" or "or" does not evaluate is parsed: its
	// evaluation errors do not count.
	skip int
}

// fail is an evaluation error, nil while skipping.
func (p *luaParser) fail(format string, args ...any) error {
	if p.skip > 0 {
		return nil
	}
	return fmt.Errorf(format, args...)
}

func evalLua(expr string, env map[string]luaValue) (luaValue, error) {
	toks, err := luaTokens(expr)
	if err != nil {
		return nil, err
	}
	p := &luaParser{toks: toks, env: env}
	v, err := p.or()
	if err == nil && p.pos < len(p.toks) {
		err = fmt.Errorf("unexpected %q in %q", p.toks[p.pos], expr)
	}
	return v, err
}

func luaTokens(s string) ([]string, error) {
	var toks []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(s) && s[j] != c {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) {
				return nil, fmt.Errorf("unfinished string in %q", s)
			}
			toks = append(toks, s[i:j+1])
			i = j + 1
		case strings.HasPrefix(s[i:], "..") || strings.HasPrefix(s[i:], "==") || strings.HasPrefix(s[i:], "~=") ||
			strings.HasPrefix(s[i:], "<=") || strings.HasPrefix(s[i:], ">="):
			toks = append(toks, s[i:i+2])
			i += 2
		case strings.ContainsRune("()[].<>,", rune(c)):
			toks = append(toks, string(c))
			i++
		case c >= '0' && c <= '9':
			j := i
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' && !strings.HasPrefix(s[j:], "..")) {
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		case c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z'):
			j := i
			for j < len(s) && (s[j] == '_' || (s[j]|0x20 >= 'a' && s[j]|0x20 <= 'z') || (s[j] >= '0' && s[j] <= '9')) {
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		default:
			return nil, fmt.Errorf("unexpected %q in %q", c, s)
		}
	}
	return toks, nil
}

func (p *luaParser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return ""
}

func (p *luaParser) next() string { t := p.peek(); p.pos++; return t }

func (p *luaParser) or() (luaValue, error) {
	v, err := p.and()
	for err == nil && p.peek() == "or" {
		p.next()
		if truthy(v) {
			p.skip++
			_, err = p.and()
			p.skip--
			continue
		}
		v, err = p.and()
	}
	return v, err
}

func (p *luaParser) and() (luaValue, error) {
	v, err := p.compare()
	for err == nil && p.peek() == "and" {
		p.next()
		if !truthy(v) {
			p.skip++
			_, err = p.compare()
			p.skip--
			continue
		}
		v, err = p.compare()
	}
	return v, err
}

func (p *luaParser) compare() (luaValue, error) {
	v, err := p.concat()
	for err == nil {
		op := p.peek()
		switch op {
		case "==", "~=", "<", ">", "<=", ">=":
		default:
			return v, nil
		}
		p.next()
		var r luaValue
		if r, err = p.concat(); err != nil {
			return nil, err
		}
		switch op {
		case "==":
			v = luaEqual(v, r)
		case "~=":
			v = !luaEqual(v, r)
		default:
			a, aok := v.(float64)
			b, bok := r.(float64)
			as, asok := v.(string)
			bs, bsok := r.(string)
			if !(aok && bok) && !(asok && bsok) {
				return nil, p.fail("attempt to compare %s with %s", luaType(v), luaType(r))
			}
			less, eq := a < b, a == b
			if asok {
				less, eq = as < bs, as == bs
			}
			switch op {
			case "<":
				v = less
			case ">":
				v = !less && !eq
			case "<=":
				v = less || eq
			case ">=":
				v = !less
			}
		}
	}
	return v, err
}

func luaEqual(a, b luaValue) bool {
	switch a := a.(type) {
	case nil:
		return b == nil
	case luaTable:
		bt, ok := b.(luaTable)
		return ok && fmt.Sprintf("%p", a) == fmt.Sprintf("%p", bt)
	}
	return a == b
}

// concat is right-associative and binds tighter than comparison.
func (p *luaParser) concat() (luaValue, error) {
	v, err := p.unary()
	if err != nil || p.peek() != ".." {
		return v, err
	}
	p.next()
	r, err := p.concat()
	if err != nil {
		return nil, err
	}
	ls, lok := concatOperand(v)
	rs, rok := concatOperand(r)
	if !lok || !rok {
		bad := v
		if lok {
			bad = r
		}
		return nil, p.fail("attempt to concatenate a %s value", luaType(bad))
	}
	return ls + rs, nil
}

func concatOperand(v luaValue) (string, bool) {
	switch v.(type) {
	case string, float64:
		return luaToString(v), true
	}
	return "", false
}

func luaType(v luaValue) string {
	switch v.(type) {
	case nil:
		return "nil"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	}
	return "table"
}

func (p *luaParser) unary() (luaValue, error) {
	if p.peek() == "not" {
		p.next()
		v, err := p.unary()
		return !truthy(v), err
	}
	return p.suffixed()
}

func (p *luaParser) suffixed() (luaValue, error) {
	v, err := p.primary()
	for err == nil {
		switch p.peek() {
		case ".":
			p.next()
			v, err = p.index(v, p.next())
		case "[":
			p.next()
			var k luaValue
			if k, err = p.or(); err != nil {
				return nil, err
			}
			if p.next() != "]" {
				return nil, fmt.Errorf("']' expected")
			}
			v, err = p.index(v, k)
		case "(":
			// Only type(x) is offered (the sandbox's type, issue #25 of the plugin).
			if f, ok := v.(func(luaValue) luaValue); ok {
				p.next()
				var arg luaValue
				if arg, err = p.or(); err != nil {
					return nil, err
				}
				if p.next() != ")" {
					return nil, fmt.Errorf("')' expected")
				}
				v = f(arg)
				continue
			}
			return v, nil
		default:
			return v, nil
		}
	}
	return v, err
}

func (p *luaParser) index(v luaValue, k luaValue) (luaValue, error) {
	t, ok := v.(luaTable)
	if !ok {
		return nil, p.fail("attempt to index a %s value", luaType(v))
	}
	return t(k), nil
}

func (p *luaParser) primary() (luaValue, error) {
	t := p.next()
	switch {
	case t == "":
		return nil, fmt.Errorf("unexpected end of expression")
	case t == "(":
		v, err := p.or()
		if err == nil && p.next() != ")" {
			err = fmt.Errorf("')' expected")
		}
		return v, err
	case t == "nil":
		return nil, nil
	case t == "true" || t == "false":
		return t == "true", nil
	case t[0] == '"' || t[0] == '\'':
		return luaUnquote(t[1 : len(t)-1]), nil
	case t[0] >= '0' && t[0] <= '9':
		f, err := strconv.ParseFloat(t, 64)
		return f, err
	case t == "type":
		return func(v luaValue) luaValue { return luaType(v) }, nil
	}
	return p.env[t], nil
}

func luaUnquote(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(s[i])
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// stringsTable is a Lua table of name -> value(s): one value as a string, several as a table.
func stringsTable(values map[string][]string, key func(luaValue) string) luaTable {
	return func(k luaValue) luaValue {
		vs := values[key(k)]
		switch len(vs) {
		case 0:
			return nil
		case 1:
			return vs[0]
		}
		return luaTable(func(i luaValue) luaValue {
			n, ok := i.(float64)
			if !ok || n < 1 || int(n) > len(vs) || n != float64(int(n)) {
				return nil
			}
			return vs[int(n)-1]
		})
	}
}
