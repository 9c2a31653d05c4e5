package kongrules

import (
	"net"
	"net/url"
	"regexp"
)

// Field checks (Field.Check) shared by entity and plugin schemas. Each takes a value that
// passed the field's type check and returns "" or Kong's message.

// CheckServicePath is typedefs.path: a service path, a health check path, a cookie path.
func CheckServicePath(v any) any { return ServicePath(v.(string)).Msg }

var methodRe = regexp.MustCompile(`^[A-Z]+$`)

// CheckMethod is typedefs.http_method: an upper-case token.
func CheckMethod(v any) any {
	if !methodRe.MatchString(v.(string)) {
		return "invalid value: " + v.(string)
	}
	return ""
}

// CheckIPOrCIDR is typedefs.ip_or_cidr.
func CheckIPOrCIDR(v any) any {
	s := v.(string)
	if net.ParseIP(s) != nil {
		return ""
	}
	if _, _, err := net.ParseCIDR(s); err == nil {
		return ""
	}
	return "invalid ip or cidr range: '" + s + "'"
}

// CheckURL is typedefs.url: an absolute URL with a host.
func CheckURL(v any) any {
	s := v.(string)
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "cannot parse '" + s + "'"
	}
	return ""
}

// CheckHeaderName is typedefs.header_name.
func CheckHeaderName(v any) any { return HeaderName(v.(string)) }
