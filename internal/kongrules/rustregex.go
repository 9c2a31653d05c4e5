package kongrules

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
)

// RustRegex returns the error of the Rust regex crate (Kong's expressions router, atc-router's
// parser: Regex::new on the right of every "~") for pattern, or "" when it compiles. Go's RE2
// syntax is close to Rust's; the differences that decide acceptance are handled before RE2
// parses the pattern:
//
//   - refused by Rust, accepted by RE2: a "{" that does not start a counted repetition of an
//     expression ("/v1/{id}"), a "[" inside a class that opens a nested class never closed
//     ("[[]"), backreference and octal escapes ("\0"), "\Q...\E";
//   - accepted by Rust, refused by RE2: repetition counts above 1000 (Rust's limit is the
//     compiled size, not emulated), a repetition of a repetition ("a**", "a{2}{3}"), the
//     "x" and "R" flags, \u escapes, \< and \> and \b{start}-style word boundaries.
//
// The message is Rust's layout ("regex parse error:", the pattern, "error: <kind>") with Rust's
// kind for the errors RE2 shares, without the caret line under the pattern.
func RustRegex(pattern string) string {
	if kind := RustRegexError(pattern); kind != "" {
		return "regex parse error:\n    " + strings.ReplaceAll(pattern, "\n", "\n    ") + "\nerror: " + kind
	}
	return ""
}

// RustRegexError is the kind of RustRegex's error ("unclosed group"), "" when Rust compiles
// pattern: one line, for a problem report.
func RustRegexError(pattern string) string {
	// Most patterns the translator makes (anchored fixed paths) use no construct that can be
	// malformed.
	if !strings.ContainsAny(pattern, `\()[]{}*+?|`) {
		return ""
	}
	goPattern, kind, _ := rustToRE2(pattern)
	for i := 0; kind == "" && i < 16; i++ {
		_, err := syntax.Parse(goPattern, syntax.Perl)
		if err == nil {
			return ""
		}
		var se *syntax.Error
		if !errors.As(err, &se) {
			kind = err.Error()
			break
		}
		if se.Code == syntax.ErrInvalidRepeatOp {
			// A repetition of a repetition: Rust nests them; RE2 refuses. Keep the first.
			if first := firstRepeatOp(se.Expr); first != "" && strings.Contains(goPattern, se.Expr) {
				goPattern = strings.Replace(goPattern, se.Expr, first, 1)
				continue
			}
		}
		kind = rustKind(se)
	}
	return kind
}

// rustKind is the Rust regex crate's name of an error RE2 also finds.
func rustKind(se *syntax.Error) string {
	switch se.Code {
	case syntax.ErrMissingParen:
		return "unclosed group"
	case syntax.ErrUnexpectedParen:
		return "unopened group"
	case syntax.ErrMissingBracket:
		return "unclosed character class"
	case syntax.ErrMissingRepeatArgument:
		return "repetition operator missing expression"
	case syntax.ErrInvalidEscape:
		return "unrecognized escape sequence"
	case syntax.ErrInvalidCharRange:
		return "invalid character class range, the start must be <= the end"
	case syntax.ErrInvalidRepeatSize:
		return "invalid repetition count range, the start must be <= the end"
	case syntax.ErrInvalidCharClass:
		return "invalid ASCII character class"
	case syntax.ErrInvalidNamedCapture, syntax.ErrInvalidPerlOp:
		for _, look := range []string{"(?=", "(?!", "(?<=", "(?<!"} {
			if strings.HasPrefix(se.Expr, look) {
				return "look-around, including look-ahead and look-behind, is not supported"
			}
		}
		if se.Code == syntax.ErrInvalidNamedCapture {
			return "invalid capture group character"
		}
		return "unrecognized flag"
	}
	return string(se.Code)
}

// firstRepeatOp is the first of two repetition operators RE2 found one after the other
// ("*?+" -> "*?", "{2}{3}" -> "{2}"), "" when expr is not that.
func firstRepeatOp(expr string) string {
	if expr == "" {
		return ""
	}
	n := 1
	if expr[0] == '{' {
		end := strings.IndexByte(expr, '}')
		if end < 0 {
			return ""
		}
		n = end + 1
	}
	if n < len(expr) && expr[n] == '?' {
		n++
	}
	if n >= len(expr) {
		return ""
	}
	return expr[:n]
}

var (
	countedRepetition = regexp.MustCompile(`^\{(\d+)(,(\d*))?\}`)
	specialBoundary   = regexp.MustCompile(`^\{(start|end|start-half|end-half)\}`)
	rustHexEscape     = regexp.MustCompile(`^(\{[0-9A-Fa-f]{1,8}\}|[0-9A-Fa-f]{4})`)
	rustBigHexEscape  = regexp.MustCompile(`^(\{[0-9A-Fa-f]{1,8}\}|[0-9A-Fa-f]{8})`)
	rustFlagGroup     = regexp.MustCompile(`^\(\?([imsUxR]*(-[imsUxR]*)?)([:)])`)
)

// CompileRustRegex compiles pattern, a regex of the Rust regex crate (Kong's expressions and
// traditional_compatible routers), into Go's regexp with Rust's meaning as far as RE2 allows:
// the syntax differences RustRegex handles, and Rust's Unicode-aware \d and \w (Go's are
// ASCII). What it cannot mean the same way is an error: a nested character class, a repetition
// count above 1000. Left as Go has them: \s and \b are ASCII in Go and Unicode in Rust.
func CompileRustRegex(pattern string) (*regexp.Regexp, error) {
	if kind := RustRegexError(pattern); kind != "" {
		return nil, errors.New(RustRegex(pattern))
	}
	goPattern, _, inexact := rustToRE2(pattern)
	if inexact != "" {
		return nil, fmt.Errorf("%s of the Rust regex crate is not modelled: %s", inexact, pattern)
	}
	for i := 0; i < 16; i++ {
		if _, err := syntax.Parse(goPattern, syntax.Perl); err == nil {
			break
		} else if se := (*syntax.Error)(nil); errors.As(err, &se) && se.Code == syntax.ErrInvalidRepeatOp {
			if first := firstRepeatOp(se.Expr); first != "" {
				goPattern = strings.Replace(goPattern, se.Expr, first, 1)
			}
		}
	}
	return regexp.Compile(unicodeClasses(goPattern))
}

// unicodeClasses gives \d and \w Rust's Unicode meaning (Go's are ASCII); \D and \W only outside a
// character class, where a negated class can say it.
func unicodeClasses(p string) string {
	const word = `\p{L}\p{M}\p{Nd}\p{Pc}`
	if !strings.Contains(p, `\d`) && !strings.Contains(p, `\w`) && !strings.Contains(p, `\D`) && !strings.Contains(p, `\W`) {
		return p
	}
	var out strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '\\' && i+1 < len(p) {
			e := p[i+1]
			i++
			switch {
			case e == 'd':
				out.WriteString(`\p{Nd}`)
			case e == 'w' && inClass:
				out.WriteString(word)
			case e == 'w':
				out.WriteString("[" + word + "]")
			case e == 'D' && !inClass:
				out.WriteString(`\P{Nd}`)
			case e == 'W' && !inClass:
				out.WriteString("[^" + word + "]")
			default:
				out.WriteByte(c)
				out.WriteByte(e)
			}
			continue
		}
		switch {
		case c == '[' && !inClass:
			inClass = true
			out.WriteByte(c)
			// A "]" first in the class (after "^") is literal.
			if i+1 < len(p) && p[i+1] == '^' {
				out.WriteByte('^')
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' {
				out.WriteByte(']')
				i++
			}
			continue
		case c == '[' && inClass && strings.HasPrefix(p[i:], "[:"):
			end := strings.Index(p[i:], ":]")
			if end > 0 {
				out.WriteString(p[i : i+end+2])
				i += end + 1
				continue
			}
		case c == ']' && inClass:
			inClass = false
		}
		out.WriteByte(c)
	}
	return out.String()
}

// rustToRE2 rewrites a Rust pattern into one RE2 accepts exactly when Rust would (as far as
// RustRegex says), or returns Rust's error kind for what Rust refuses and RE2 would not. Where
// it writes a stand-in that keeps acceptance but not meaning, inexact says what.
func rustToRE2(p string) (goPattern, kind, inexact string) {
	var out strings.Builder
	afterExpr := false // something a repetition can apply to precedes
	for i := 0; i < len(p); {
		c := p[i]
		switch c {
		case '\\':
			if i+1 >= len(p) {
				return "", "incomplete escape sequence, reached end of pattern prematurely", ""
			}
			e := p[i+1]
			rest := p[i+2:]
			switch {
			case e >= '0' && e <= '9':
				return "", "backreferences are not supported", ""
			case e == 'Q' || e == 'E':
				return "", "unrecognized escape sequence", ""
			case e == '<' || e == '>':
				out.WriteString(`\b`)
				i += 2
			case e == 'b' && strings.HasPrefix(rest, "{"):
				m := specialBoundary.FindString(rest)
				if m == "" {
					return "", "special word boundary assertion is unrecognized", ""
				}
				out.WriteString(`\b`)
				i += 2 + len(m)
			case e == 'u' || e == 'U':
				re := rustHexEscape
				if e == 'U' {
					re = rustBigHexEscape
				}
				m := re.FindString(rest)
				if m == "" {
					return "", "invalid hexadecimal digit", ""
				}
				out.WriteString(`\x{` + strings.Trim(m, "{}") + `}`)
				i += 2 + len(m)
			default:
				out.WriteString(p[i : i+2])
				i += 2
			}
			afterExpr = true
		case '[':
			end, nested, kind := rustClassEnd(p, i)
			if kind != "" {
				return "", kind, ""
			}
			if nested {
				inexact = "a nested character class"
				out.WriteString("[a]") // a nested class: Rust's own; RE2 would read it otherwise
			} else {
				out.WriteString(p[i:end])
			}
			i = end
			afterExpr = true
		case '{':
			m := countedRepetition.FindStringSubmatch(p[i:])
			switch {
			case m == nil && !strings.Contains(p[i:], "}"):
				return "", "unclosed counted repetition", ""
			case m == nil:
				return "", "repetition quantifier expects a valid decimal", ""
			case !afterExpr:
				return "", "repetition operator missing expression", ""
			}
			lo, _ := strconv.Atoi(m[1])
			hi := lo
			if m[3] != "" {
				hi, _ = strconv.Atoi(m[3])
			}
			if m[2] != "" && m[3] != "" && hi < lo {
				return "", "invalid repetition count range, the start must be <= the end", ""
			}
			if lo > 1000 || hi > 1000 {
				inexact = "a repetition count above 1000"
				out.WriteString("{1}") // RE2's limit; Rust's is the compiled size
			} else {
				out.WriteString(m[0])
			}
			i += len(m[0])
		case '(':
			if m := rustFlagGroup.FindStringSubmatch(p[i:]); m != nil {
				flags := strings.NewReplacer("x", "", "R", "").Replace(m[1])
				switch {
				case strings.Trim(flags, "-") == "" && m[3] == ")":
				case strings.Trim(flags, "-") == "":
					out.WriteString("(?:")
				default:
					out.WriteString("(?" + strings.TrimSuffix(flags, "-") + m[3])
				}
				i += len(m[0])
				afterExpr = false
				continue
			}
			out.WriteByte(c)
			i++
			afterExpr = false
		case '|':
			out.WriteByte(c)
			i++
			afterExpr = false
		default:
			out.WriteByte(c)
			i++
			afterExpr = true
		}
	}
	return out.String(), "", inexact
}

// rustClassEnd scans the character class opening at p[start] ("[") as Rust does: a "]" first
// (after an optional "^") is literal, "[:name:]" is an ASCII class, any other "[" opens a
// nested class. It returns the index after the class, whether it nests, or Rust's error.
func rustClassEnd(p string, start int) (int, bool, string) {
	depth, nested := 0, false
	i := start
	for i < len(p) {
		// Opening a class (outer or nested).
		depth++
		i++
		if i < len(p) && p[i] == '^' {
			i++
		}
		if i < len(p) && p[i] == ']' {
			i++ // literal
		}
	inner:
		for i < len(p) {
			switch p[i] {
			case '\\':
				i += 2
			case '[':
				if end := strings.Index(p[i:], ":]"); i+1 < len(p) && p[i+1] == ':' && end > 0 {
					i += end + 2
					continue
				}
				nested = true
				break inner // opens a nested class
			case ']':
				depth--
				i++
				if depth == 0 {
					return i, nested, ""
				}
			default:
				i++
			}
		}
	}
	return 0, false, "unclosed character class"
}
