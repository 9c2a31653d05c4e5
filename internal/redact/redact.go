// Package redact keeps secrets out of logs and Events: credential values, certificate keys
// and secret-looking plugin configuration values (configFrom's included) of the configuration
// being synced, wherever they appear in a message, Kong's echoed error messages included
// (a database-mode UNIQUE violation quotes the duplicate key, for example).
package redact

import (
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/kong/go-database-reconciler/pkg/file"
	corev1 "k8s.io/api/core/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/objgraph"
	"github.com/konductor/konductor/internal/store"
)

// Mask replaces a secret in a message.
const Mask = "[redacted]"

// minSecretLen is the shortest value replaced wherever it appears: a shorter one would mask
// ordinary words of messages. Shorter secrets are still masked after a secret field name.
const minSecretLen = 4

// Redactor masks secrets in messages. The zero value and nil mask only what the patterns
// find. Safe for concurrent use once built.
type Redactor struct {
	values *strings.Replacer
}

// secretField names the configuration fields whose values are secrets: credentials, keys,
// tokens, passwords (a plugin's redis_password, an openid-connect client_secret, ...).
var secretField = regexp.MustCompile(`(?i)(password|passwd|secret|token|api_?key|private_?key|credential|^key$)`)

// secretName matches a field name whose value is a secret, in Kong's and JSON's quoting.
const secretName = `["']?\b(?:[a-z_]*password|passwd|[a-z_]*secret|[a-z_]*token|api_?key|private_?key|key)["']?`

// patterns mask secrets recognisable without knowing their value: PEM private keys, and a
// value given to a secret field name: key="..." or key=... (Kong's UNIQUE violation
// messages), "password": "..." (JSON). "key: expected a string" (a field and its error) is
// left alone: after a colon only a quoted value is masked.
var patterns = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)`), Mask},
	{regexp.MustCompile(`(?i)(` + secretName + `\s*=\s*)("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[^\s,;}\])'"]+)`), "${1}" + Mask},
	{regexp.MustCompile(`(?i)(` + secretName + `\s*:\s*)("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')`), "${1}" + Mask},
}

// ForState returns a Redactor masking the secrets of s: every credential's secret, every
// certificate's key, and the string values of plugin configuration fields named like secrets.
func ForState(s *kongstate.State) *Redactor { return ForStateAnd(s) }

// ForStateAnd is ForState masking more values too (a Secret's whole data).
func ForStateAnd(s *kongstate.State, more ...string) *Redactor {
	values := more
	if s == nil {
		return New(values...)
	}
	add := func(ps ...*string) {
		for _, p := range ps {
			if p != nil && len(*p) >= minSecretLen {
				values = append(values, *p)
			}
		}
	}
	for _, c := range s.Consumers {
		if c == nil {
			continue
		}
		for _, k := range c.KeyAuths {
			add(k.Key)
		}
		for _, b := range c.BasicAuths {
			add(b.Password)
		}
		for _, h := range c.HMACAuths {
			add(h.Secret)
		}
		for _, j := range c.JWTAuths {
			add(j.Secret)
		}
		for _, o := range c.Oauth2Creds {
			add(o.ClientSecret)
		}
	}
	for _, c := range s.Certificates {
		if c != nil {
			add(c.Key)
		}
	}
	for _, p := range s.AllPlugins() {
		values = append(values, pluginSecrets(p)...)
	}
	return New(values...)
}

// New returns a Redactor masking values (and what the patterns find).
func New(values ...string) *Redactor {
	sort.Slice(values, func(i, j int) bool { return len(values[i]) > len(values[j]) }) // longest first
	var pairs []string
	seen := map[string]bool{}
	for _, v := range values {
		if len(v) < minSecretLen || seen[v] {
			continue
		}
		seen[v] = true
		pairs = append(pairs, v, Mask)
	}
	if len(pairs) == 0 {
		return &Redactor{}
	}
	return &Redactor{values: strings.NewReplacer(pairs...)}
}

// pluginSecrets are the string values under secret-named fields of p's configuration, at any
// depth (a field named like a secret masks every string below it).
func pluginSecrets(p *file.FPlugin) []string {
	if p == nil || p.Config == nil {
		return nil
	}
	var out []string
	var walk func(v any, secret bool)
	walk = func(v any, secret bool) {
		switch t := v.(type) {
		case map[string]any:
			for k, sub := range t {
				walk(sub, secret || secretField.MatchString(k))
			}
		case []any:
			for _, sub := range t {
				walk(sub, secret)
			}
		case string:
			if secret && len(t) >= minSecretLen {
				out = append(out, t)
			}
		}
	}
	walk(map[string]any(p.Config), false)
	return out
}

// String masks the secrets in msg.
func (r *Redactor) String(msg string) string {
	if r != nil && r.values != nil {
		msg = r.values.Replace(msg)
	}
	for _, p := range patterns {
		msg = p.re.ReplaceAllString(msg, p.with)
	}
	return msg
}

// Error is err with its message masked (nil for nil), for logs: errors.Is and As still see
// the original.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	return &redacted{err: err, msg: r.String(err.Error())}
}

type redacted struct {
	err error
	msg string
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }

// DocumentValues are the values to mask of a Secret's value: the value whole and, when it is
// a YAML or JSON document (a plugin's configFrom), every string and number in it, which a
// message about the configuration built from it could quote.
func DocumentValues(v []byte) []string {
	out := []string{string(v)}
	var doc any
	if err := sigsyaml.Unmarshal(v, &doc); err != nil {
		return out
	}
	var walk func(any)
	walk = func(x any) {
		switch t := x.(type) {
		case string:
			out = append(out, t)
		case float64:
			out = append(out, strconv.FormatFloat(t, 'f', -1, 64))
		case map[string]any:
			for _, e := range t {
				walk(e)
			}
		case []any:
			for _, e := range t {
				walk(e)
			}
		}
	}
	walk(doc)
	return out
}

// ForTranslation is the one redaction of everything a translation's messages reach: Events,
// status conditions, logs, the admission webhook's answers and the diagnostics server. It
// masks what ForState does and every value of every Secret the translation read (g has an
// edge to it from an object it translated: credentials, certificates, a plugin's configFrom
// or configPatches, whatever namespace the Secret is in), and more. A plugin configuration
// read from a Secret is a secret whole, whatever its field names, and Kong's refusal of the
// plugin can quote it in a message about an object of another namespace.
func ForTranslation(s *kongstate.State, g *objgraph.Graph, secrets []*corev1.Secret, more ...string) *Redactor {
	values := more
	if g != nil {
		for _, sec := range secrets {
			if sec == nil || len(g.ReferredBy(kongstate.RefFor(sec, store.KindSecret.GroupVersionKind()))) == 0 {
				continue
			}
			values = append(values, SecretValues(sec)...)
		}
	}
	return ForStateAnd(s, values...)
}

// SecretValues are the values to mask of every key of sec (DocumentValues).
func SecretValues(sec *corev1.Secret) []string {
	var out []string
	for _, v := range sec.Data {
		out = append(out, DocumentValues(v)...)
	}
	for _, v := range sec.StringData {
		out = append(out, DocumentValues([]byte(v))...)
	}
	return out
}
