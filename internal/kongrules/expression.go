package kongrules

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Expression checks a route expression of Kong's expressions router (the ATC language of
// Kong's atc-router: src/atc_grammar.pest and src/semantics.rs) against the fields Kong
// offers for the route's subsystem (http, or stream for tcp/tls/udp routes). It returns ""
// when Kong accepts it, else the router's error: a parse error in pest's layout, or the
// semantic error ("Unknown LHS field", "Type mismatch between the LHS and RHS values of
// predicate", ...). A "~" whose regex the Rust regex crate refuses (RustRegex) is an error of
// the parse, over the predicate's span, after any syntax error and before any semantic one
// (atc-router's parser.rs compiles it while it builds the tree). Kong prefixes each with
// "Router Expression failed validation: ".
func Expression(expr string, stream bool) string {
	p := &atcParser{src: expr, stream: stream}
	p.skipSpace()
	if err := p.expression(); err != "" {
		return err
	}
	p.skipSpace()
	if p.pos < len(p.src) {
		return p.fail("EOI, logical_operator")
	}
	if p.regex != "" {
		return p.regex
	}
	return p.semantic
}

type atcType int

const (
	atcString atcType = iota
	atcInt
	atcIP
	atcCIDR
)

// atcField returns the type of an ATC field, false when the router does not know it.
func atcField(name string, stream bool) (atcType, bool) {
	switch name {
	case "net.protocol", "tls.sni":
		return atcString, true
	case "net.src.ip", "net.dst.ip":
		return atcIP, true
	case "net.src.port", "net.dst.port":
		return atcInt, true
	}
	if stream {
		return 0, false
	}
	switch name {
	case "http.method", "http.host", "http.path":
		return atcString, true
	}
	for _, prefix := range []string{"http.headers.", "http.queries.", "http.path.segments."} {
		if strings.HasPrefix(name, prefix) && len(name) > len(prefix) {
			return atcString, true
		}
	}
	return 0, false
}

type atcParser struct {
	src      string
	pos      int
	stream   bool
	semantic string // first semantic error; parsing goes on to find syntax errors first
	regex    string // first regex the Rust regex crate refuses, as the parse error Kong gives
}

// fail renders a parse error at the current position as pest does.
func (p *atcParser) fail(expected string) string {
	line, col, text := p.lineOf(p.pos)
	num := strconv.Itoa(line)
	pad := strings.Repeat(" ", len(num))
	return fmt.Sprintf("%s--> %d:%d\n%s |\n%s | %s\n%s | %s^---\n%s |\n%s = expected %s",
		pad, line, col, pad, num, text, pad, strings.Repeat(" ", col-1), pad, pad, expected)
}

// failSpan renders pest's custom error over src[start:end] (on one line) with message.
func (p *atcParser) failSpan(start, end int, message string) string {
	line, col, text := p.lineOf(start)
	num := strconv.Itoa(line)
	pad := strings.Repeat(" ", len(num))
	mark := "^"
	if n := len([]rune(p.src[start:end])); n > 1 {
		mark = "^" + strings.Repeat("-", n-2) + "^"
	}
	return fmt.Sprintf("%s--> %d:%d\n%s |\n%s | %s\n%s | %s%s\n%s |\n%s = %s",
		pad, line, col, pad, num, text, pad, strings.Repeat(" ", col-1), mark, pad, pad, message)
}

// lineOf is the line and column (from 1) of src[pos] and the text of its line.
func (p *atcParser) lineOf(pos int) (line, col int, text string) {
	line, col = 1, 1
	lineStart := 0
	for i := 0; i < pos && i < len(p.src); i++ {
		if p.src[i] == '\n' {
			line++
			col = 1
			lineStart = i + 1
			continue
		}
		col++
	}
	text = p.src[lineStart:]
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		text = text[:i]
	}
	return line, col, text
}

func (p *atcParser) skipSpace() {
	for p.pos < len(p.src) && strings.IndexByte(" \t\r\n", p.src[p.pos]) >= 0 {
		p.pos++
	}
}

func (p *atcParser) peek(s string) bool { return strings.HasPrefix(p.src[p.pos:], s) }

// expression = term (("&&" | "||") term)*
func (p *atcParser) expression() string {
	if err := p.term(); err != "" {
		return err
	}
	for {
		p.skipSpace()
		if !p.peek("&&") && !p.peek("||") {
			return ""
		}
		p.pos += 2
		p.skipSpace()
		if err := p.term(); err != "" {
			return err
		}
	}
}

// term = predicate | "(" expression ")" | "!" "(" expression ")"
func (p *atcParser) term() string {
	if p.peek("!") {
		p.pos++
		p.skipSpace()
		if !p.peek("(") {
			return p.fail("parenthesised_expression")
		}
	}
	if p.peek("(") {
		p.pos++
		p.skipSpace()
		if err := p.expression(); err != "" {
			return err
		}
		p.skipSpace()
		if !p.peek(")") {
			return p.fail("logical_operator")
		}
		p.pos++
		return ""
	}
	return p.predicate()
}

func isAlpha(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (p *atcParser) ident() string {
	start := p.pos
	if p.pos >= len(p.src) || !isAlpha(p.src[p.pos]) {
		return ""
	}
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if !isAlpha(c) && !isDigit(c) && c != '_' && c != '.' {
			break
		}
		p.pos++
	}
	return p.src[start:p.pos]
}

var atcOperators = []string{"==", "!=", "~", "^=", "=^", ">=", ">", "<=", "<", "in", "not", "contains"}

// predicate = lhs binary_operator rhs; lhs = ident | ident "(" ident ")"
func (p *atcParser) predicate() string {
	start := p.pos
	name := p.ident()
	if name == "" {
		return p.fail("term")
	}
	var transform string
	p.skipSpace()
	if p.peek("(") {
		transform = name
		p.pos++
		p.skipSpace()
		if name = p.ident(); name == "" {
			return p.fail("ident")
		}
		p.skipSpace()
		if !p.peek(")") {
			return p.fail("ident")
		}
		p.pos++
		p.skipSpace()
	}
	op := ""
	for _, o := range atcOperators {
		if p.peek(o) {
			op = o
			break
		}
	}
	if op == "" {
		return p.fail("binary_operator")
	}
	p.pos += len(op)
	if op == "not" {
		p.skipSpace()
		if !p.peek("in") {
			return p.fail("binary_operator")
		}
		p.pos += 2
		op = "not in"
	}
	p.skipSpace()
	rhs, value, err := p.rhs()
	if err != "" {
		return err
	}
	if op == "~" && rhs == atcString && p.regex == "" {
		if e := RustRegex(value); e != "" {
			p.regex = p.failSpan(start, p.pos, e)
		}
	}
	if p.semantic == "" {
		p.semantic = p.check(name, transform, op, rhs)
	}
	return ""
}

// rhs = str_literal | raw string | ip_literal | int_literal; it returns the literal's type and,
// for a string, its value (escapes resolved).
func (p *atcParser) rhs() (atcType, string, string) {
	switch {
	case p.peek(`"`):
		p.pos++
		var value strings.Builder
		for p.pos < len(p.src) && p.src[p.pos] != '"' {
			c := p.src[p.pos]
			if c == '\\' {
				if p.pos+1 >= len(p.src) || strings.IndexByte(`"\nrt`, p.src[p.pos+1]) < 0 {
					return 0, "", p.fail(`"\"", "\\", "n", "r" or "t"`)
				}
				p.pos++
				c = map[byte]byte{'"': '"', '\\': '\\', 'n': '\n', 'r': '\r', 't': '\t'}[p.src[p.pos]]
			}
			value.WriteByte(c)
			p.pos++
		}
		if p.pos >= len(p.src) {
			return 0, "", p.fail(`"\""`)
		}
		p.pos++
		return atcString, value.String(), ""
	case p.peek(`r#"`):
		end := strings.Index(p.src[p.pos+3:], `"#`)
		if end < 0 {
			p.pos = len(p.src)
			return 0, "", p.fail(`"\"#"`)
		}
		value := p.src[p.pos+3 : p.pos+3+end]
		p.pos += 3 + end + 2
		return atcString, value, ""
	}
	start := p.pos
	for p.pos < len(p.src) && strings.IndexByte("0123456789abcdefABCDEFx:./-", p.src[p.pos]) >= 0 {
		p.pos++
	}
	lit := p.src[start:p.pos]
	if ip, _, err := net.ParseCIDR(lit); err == nil && ip != nil {
		return atcCIDR, "", ""
	}
	if net.ParseIP(lit) != nil {
		return atcIP, "", ""
	}
	if _, err := strconv.ParseInt(lit, 0, 64); err == nil && lit != "" {
		return atcInt, "", ""
	}
	p.pos = start
	return 0, "", p.fail("rhs")
}

// check is the router's semantic validation of one predicate.
func (p *atcParser) check(name, transform, op string, rhs atcType) string {
	lhs, ok := atcField(name, p.stream)
	if !ok {
		return "Unknown LHS field"
	}
	switch transform {
	case "", "lower", "any":
	default:
		return "Unknown transform function: " + transform
	}
	if op != "~" && op != "in" && op != "not in" && lhs != rhs {
		return "Type mismatch between the LHS and RHS values of predicate"
	}
	if transform == "lower" && lhs != atcString {
		return "lower-case transformation function only supported with String type fields"
	}
	switch op {
	case "~":
		if lhs != atcString || rhs != atcString {
			return "Regex operators only supports string operands"
		}
		// Its pattern was compiled while parsing (RustRegex).
	case "^=", "=^":
		if rhs != atcString {
			return "Regex/Prefix/Postfix operators only supports string operands"
		}
	case ">", ">=", "<", "<=":
		if rhs != atcInt {
			return "Greater/GreaterOrEqual/Lesser/LesserOrEqual operators only supports integer operands"
		}
	case "in", "not in":
		if lhs != atcIP || rhs != atcCIDR {
			return "In/NotIn operators only supports IP in CIDR"
		}
	case "contains":
		if rhs != atcString {
			return "Contains operator only supports string operands"
		}
	}
	return ""
}
