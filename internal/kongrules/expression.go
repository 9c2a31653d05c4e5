package kongrules

import (
	"fmt"
	"net/netip"
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
	_, err := ParseExpression(expr, stream)
	return err
}

// ParseExpression parses and checks expr as Expression does and returns its tree, nil with the
// router's error when Kong refuses it. The tree keeps atc-router's precedence: its Pratt parser
// declares "&&" before "||", so "||" binds tighter ("a && b || c" is "a && (b || c)"), both
// left-associative.
func ParseExpression(expr string, stream bool) (*ATCNode, string) {
	p := &atcParser{src: expr, stream: stream}
	p.skipSpace()
	root, err := p.expression()
	if err != "" {
		return nil, err
	}
	p.skipSpace()
	if p.pos < len(p.src) {
		return nil, p.fail("EOI, logical_operator")
	}
	if p.regex != "" {
		return nil, p.regex
	}
	if p.semantic != "" {
		return nil, p.semantic
	}
	return root, ""
}

// ATCNode is a node of a parsed expression: a logical operation over Left (and Right), or a
// predicate.
type ATCNode struct {
	Op          ATCLogic
	Left, Right *ATCNode
	Predicate   *ATCPredicate
}

// ATCLogic is what an ATCNode does.
type ATCLogic int

const (
	ATCPredicateNode ATCLogic = iota
	ATCAnd
	ATCOr
	ATCNot // of Left
)

// ATCPredicate is "lhs op rhs". Transforms are the functions wrapped around the field, outermost
// first ("lower(any(http.headers.x))": lower, any); atc-router applies them as flags.
type ATCPredicate struct {
	Field      string
	Transforms []string
	Op         string // ==, !=, ~, ^=, =^, >, >=, <, <=, in, not in, contains
	Value      ATCValue
}

// Has reports whether the predicate's field carries the transform ("lower" or "any").
func (p *ATCPredicate) Has(transform string) bool {
	for _, t := range p.Transforms {
		if t == transform {
			return true
		}
	}
	return false
}

// ATCValue is a literal on the right of a predicate.
type ATCValue struct {
	Type ATCType
	Str  string       // a string, or a regex's pattern
	Int  int64        // an integer
	IP   netip.Addr   // an IP address
	CIDR netip.Prefix // an IP network (masked as the cidr crate requires)
}

// ATCType is the type of a field or literal.
type ATCType int

const (
	ATCString ATCType = iota
	ATCInt
	ATCIP
	ATCCIDR
)

// ATCField returns the type of an ATC field in the http or the stream subsystem (Kong's
// kong/router/fields.lua), false when the router does not know it.
func ATCField(name string, stream bool) (ATCType, bool) {
	return atcField(name, stream)
}

func atcField(name string, stream bool) (ATCType, bool) {
	switch name {
	case "net.protocol", "tls.sni":
		return ATCString, true
	case "net.src.ip", "net.dst.ip":
		return ATCIP, true
	case "net.src.port", "net.dst.port":
		return ATCInt, true
	}
	if stream {
		return 0, false
	}
	switch name {
	case "http.method", "http.host", "http.path":
		return ATCString, true
	case "http.path.segments.len":
		return ATCInt, true
	}
	for _, prefix := range []string{"http.headers.", "http.queries.", "http.path.segments."} {
		if strings.HasPrefix(name, prefix) && len(name) > len(prefix) {
			return ATCString, true
		}
	}
	return 0, false
}

type atcParser struct {
	src      string
	pos      int
	stream   bool
	semantic string // first semantic error; parsing goes on to find syntax errors first
	regex    string // first literal refused while the tree is built (a regex the Rust regex crate refuses, a CIDR with host bits), as the parse error Kong gives
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

// expression = term (("&&" | "||") term)*, "||" binding tighter than "&&".
func (p *atcParser) expression() (*ATCNode, string) {
	var ands []*ATCNode // terms joined by "&&", each an "||" chain
	or, err := p.term()
	if err != "" {
		return nil, err
	}
	for {
		p.skipSpace()
		var op string
		switch {
		case p.peek("&&"):
			op = "&&"
		case p.peek("||"):
			op = "||"
		default:
			ands = append(ands, or)
			root := ands[0]
			for _, n := range ands[1:] {
				root = &ATCNode{Op: ATCAnd, Left: root, Right: n}
			}
			return root, ""
		}
		p.pos += 2
		p.skipSpace()
		next, err := p.term()
		if err != "" {
			return nil, err
		}
		if op == "||" {
			or = &ATCNode{Op: ATCOr, Left: or, Right: next}
			continue
		}
		ands = append(ands, or)
		or = next
	}
}

// term = predicate | "(" expression ")" | "!" "(" expression ")"
func (p *atcParser) term() (*ATCNode, string) {
	not := false
	if p.peek("!") {
		not = true
		p.pos++
		p.skipSpace()
		if !p.peek("(") {
			return nil, p.fail("parenthesised_expression")
		}
	}
	if p.peek("(") {
		p.pos++
		p.skipSpace()
		inner, err := p.expression()
		if err != "" {
			return nil, err
		}
		p.skipSpace()
		if !p.peek(")") {
			return nil, p.fail("logical_operator")
		}
		p.pos++
		if not {
			return &ATCNode{Op: ATCNot, Left: inner}, ""
		}
		return inner, ""
	}
	pred, err := p.predicate()
	if err != "" {
		return nil, err
	}
	return &ATCNode{Op: ATCPredicateNode, Predicate: pred}, ""
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

// predicate = lhs binary_operator rhs; lhs = ident | ident "(" lhs ")"
func (p *atcParser) predicate() (*ATCPredicate, string) {
	start := p.pos
	pred := &ATCPredicate{}
	name, err := p.lhs(pred)
	if err != "" {
		return nil, err
	}
	pred.Field = name
	p.skipSpace()
	op := ""
	for _, o := range atcOperators {
		if p.peek(o) {
			op = o
			break
		}
	}
	if op == "" {
		return nil, p.fail("binary_operator")
	}
	p.pos += len(op)
	if op == "not" {
		p.skipSpace()
		if !p.peek("in") {
			return nil, p.fail("binary_operator")
		}
		p.pos += 2
		op = "not in"
	}
	pred.Op = op
	p.skipSpace()
	value, err := p.rhs()
	if err != "" {
		return nil, err
	}
	pred.Value = value
	if op == "~" && value.Type == ATCString && p.regex == "" {
		if e := RustRegex(value.Str); e != "" {
			p.regex = p.failSpan(start, p.pos, e)
		}
	}
	if p.semantic == "" {
		p.semantic = p.check(pred)
	}
	return pred, ""
}

// lhs reads a field, with the transform functions around it (recorded in pred), and returns
// the field's name.
func (p *atcParser) lhs(pred *ATCPredicate) (string, string) {
	name := p.ident()
	if name == "" {
		if len(pred.Transforms) > 0 {
			return "", p.fail("ident")
		}
		return "", p.fail("term")
	}
	p.skipSpace()
	if !p.peek("(") {
		return name, ""
	}
	pred.Transforms = append(pred.Transforms, name)
	p.pos++
	p.skipSpace()
	field, err := p.lhs(pred)
	if err != "" {
		return "", err
	}
	p.skipSpace()
	if !p.peek(")") {
		return "", p.fail("ident")
	}
	p.pos++
	return field, ""
}

// rhs = str_literal | raw string | ip_literal | int_literal.
func (p *atcParser) rhs() (ATCValue, string) {
	switch {
	case p.peek(`"`):
		p.pos++
		var value strings.Builder
		for p.pos < len(p.src) && p.src[p.pos] != '"' {
			c := p.src[p.pos]
			if c == '\\' {
				if p.pos+1 >= len(p.src) || strings.IndexByte(`"\nrt`, p.src[p.pos+1]) < 0 {
					return ATCValue{}, p.fail(`"\"", "\\", "n", "r" or "t"`)
				}
				p.pos++
				c = map[byte]byte{'"': '"', '\\': '\\', 'n': '\n', 'r': '\r', 't': '\t'}[p.src[p.pos]]
			}
			value.WriteByte(c)
			p.pos++
		}
		if p.pos >= len(p.src) {
			return ATCValue{}, p.fail(`"\""`)
		}
		p.pos++
		return ATCValue{Type: ATCString, Str: value.String()}, ""
	case p.peek(`r#"`):
		end := strings.Index(p.src[p.pos+3:], `"#`)
		if end < 0 {
			p.pos = len(p.src)
			return ATCValue{}, p.fail(`"\"#"`)
		}
		value := p.src[p.pos+3 : p.pos+3+end]
		p.pos += 3 + end + 2
		return ATCValue{Type: ATCString, Str: value}, ""
	}
	start := p.pos
	for p.pos < len(p.src) && strings.IndexByte("0123456789abcdefABCDEFx:./-", p.src[p.pos]) >= 0 {
		p.pos++
	}
	lit := p.src[start:p.pos]
	if prefix, err := netip.ParsePrefix(lit); err == nil {
		if prefix != prefix.Masked() && p.regex == "" {
			// The cidr crate refuses a network with host bits set, while the tree is built.
			p.regex = p.failSpan(start, p.pos, "host part of address was not zero")
		}
		return ATCValue{Type: ATCCIDR, CIDR: prefix.Masked()}, ""
	}
	if ip, err := netip.ParseAddr(lit); err == nil && ip.Zone() == "" {
		return ATCValue{Type: ATCIP, IP: ip}, ""
	}
	if n, ok := atcInt(lit); ok {
		return ATCValue{Type: ATCInt, Int: n}, ""
	}
	p.pos = start
	return ATCValue{}, p.fail("rhs")
}

// atcInt reads an int_literal as the grammar does: an optional "-", then octal digits after a
// "0", hexadecimal ones after "0x", or decimal ones.
func atcInt(lit string) (int64, bool) {
	digits := strings.TrimPrefix(lit, "-")
	base := 10
	switch {
	case len(digits) > 1 && digits[0] == '0' && strings.Trim(digits[1:], "01234567") == "":
		base, digits = 8, digits[1:]
	case strings.HasPrefix(digits, "0x") && len(digits) > 2:
		base, digits = 16, digits[2:]
	}
	n, err := strconv.ParseInt(digits, base, 64)
	if err != nil || strings.ContainsAny(digits, "_+-") {
		return 0, false
	}
	if digits != lit && strings.HasPrefix(lit, "-") {
		n = -n
	}
	return n, true
}

// check is the router's semantic validation of one predicate.
func (p *atcParser) check(pred *ATCPredicate) string {
	op, rhs := pred.Op, pred.Value.Type
	lhs, ok := atcField(pred.Field, p.stream)
	if !ok {
		return "Unknown LHS field"
	}
	for _, transform := range pred.Transforms {
		switch transform {
		case "lower", "any":
		default:
			return "Unknown transform function: " + transform
		}
	}
	transform := ""
	if pred.Has("lower") {
		transform = "lower"
	}
	if op != "~" && op != "in" && op != "not in" && lhs != rhs {
		return "Type mismatch between the LHS and RHS values of predicate"
	}
	if transform == "lower" && lhs != ATCString {
		return "lower-case transformation function only supported with String type fields"
	}
	switch op {
	case "~":
		if lhs != ATCString || rhs != ATCString {
			return "Regex operators only supports string operands"
		}
		// Its pattern was compiled while parsing (RustRegex).
	case "^=", "=^":
		if rhs != ATCString {
			return "Regex/Prefix/Postfix operators only supports string operands"
		}
	case ">", ">=", "<", "<=":
		if rhs != ATCInt {
			return "Greater/GreaterOrEqual/Lesser/LesserOrEqual operators only supports integer operands"
		}
	case "in", "not in":
		if lhs != ATCIP || rhs != ATCCIDR {
			return "In/NotIn operators only supports IP in CIDR"
		}
	case "contains":
		if rhs != ATCString {
			return "Contains operator only supports string operands"
		}
	}
	return ""
}
