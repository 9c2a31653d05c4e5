package kongrules

import (
	"fmt"
	"strconv"
	"strings"
)

// The Admin API's request body limit. Kong's admin server block takes its nginx_admin_*
// directives from kong.conf (kong/templates/nginx_kong.lua, "injected nginx_admin_*
// directives"); kong/templates/kong_defaults.lua sets nginx_admin_client_max_body_size = 10m
// (and nginx_admin_client_body_buffer_size = 10m), and GET / reports both, as strings, in
// its configuration (kong.configuration.remove_sensitive keeps them).
const (
	// AdminMaxBodySizeKey is the key of the limit in GET /'s configuration and in kong.conf.
	AdminMaxBodySizeKey = "nginx_admin_client_max_body_size"
	// AdminBodyBufferSizeKey is the key of the body buffer in GET /'s configuration.
	AdminBodyBufferSizeKey = "nginx_admin_client_body_buffer_size"
	// AdminMaxBodySizeEnv is the environment variable a Kong Deployment sets it with.
	AdminMaxBodySizeEnv = "KONG_NGINX_ADMIN_CLIENT_MAX_BODY_SIZE"
	// AdminBodyBufferSizeEnv is the environment variable of the body buffer. Raise it with the
	// limit: a body larger than the buffer is written to a temporary file, which the Admin API
	// does not read (kong/api/arguments.lua: "we don't support file i/o in case the body is
	// buffered to a file").
	AdminBodyBufferSizeEnv = "KONG_NGINX_ADMIN_CLIENT_BODY_BUFFER_SIZE"
	// DefaultAdminMaxBodySize is Kong's default limit.
	DefaultAdminMaxBodySize = "10m"
)

// RequestEntityTooLargeBody is what Kong's Admin API answers, with status 413 and
// Content-Type text/html, to a request whose body is over the limit: nginx's own page (the
// admin server has no error_page, so no Lua runs), without the "<hr><center>openresty</center>"
// line, which Kong's build removes (build/openresty/patches/nginx-*-remove-server-tokens-from-
// special-responses-output.patch). 148 bytes, as the access log of KIC #5568 shows. nginx
// closes the connection after it.
const RequestEntityTooLargeBody = "<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n" +
	"<center><h1>413 Request Entity Too Large</h1></center>\r\n</body>\r\n</html>\r\n"

// ParseNginxSize reads a size as nginx reads client_max_body_size (ngx_parse_offset): a
// number of bytes, or of kilobytes, megabytes or gigabytes with the suffix k, m or g (either
// case). 0 means no limit.
func ParseNginxSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty size")
	}
	unit := int64(1)
	switch s[len(s)-1] {
	case 'k', 'K':
		unit = 1 << 10
	case 'm', 'M':
		unit = 1 << 20
	case 'g', 'G':
		unit = 1 << 30
	}
	digits := s
	if unit > 1 {
		digits = s[:len(s)-1]
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/unit {
		return 0, fmt.Errorf("invalid size %q: a number of bytes, or with k, m or g", s)
	}
	return n * unit, nil
}
