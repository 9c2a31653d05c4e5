package kongemu

import (
	"net"
	"regexp"
	"strconv"
	"strings"
)

// Kong's proxy_listen and stream_listen parsed as GET / reports them in
// configuration.proxy_listeners and stream_listeners (kong/conf_loader/listeners.lua,
// parse_listeners; docs/kong-facts.md "Gateway listeners"): one object per listen with its
// ip, port, the listen as written (listener) and one boolean per flag the subsystem knows,
// false when absent. A backlog flag is reported under its own text ("backlog=16384": true),
// or under the pattern "backlog=%d+": false when absent. "off" is no listen: an empty Lua
// table, which Kong's JSON encoder writes as an object, {}.

var (
	proxyListenFlags  = []string{"ssl", "http2", "proxy_protocol", "deferred", "bind", "reuseport", "backlog=%d+"}
	streamListenFlags = []string{"udp", "ssl", "proxy_protocol", "bind", "reuseport", "backlog=%d+"}
	backlogFlag       = regexp.MustCompile(`^backlog=\d+$`)
)

func listeners(listens []string, flags []string) any {
	var out []any
	for _, l := range listens {
		fields := strings.Fields(l)
		if len(fields) == 0 || fields[0] == "off" {
			continue
		}
		host, port, err := net.SplitHostPort(fields[0])
		if err != nil {
			continue // Kong refuses such a setting at start
		}
		p, _ := strconv.Atoi(port)
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		entry := map[string]any{"ip": host, "port": p, "listener": l}
		for _, f := range flags {
			entry[f] = false
		}
		for _, f := range fields[1:] {
			if backlogFlag.MatchString(f) {
				delete(entry, "backlog=%d+")
			}
			entry[f] = true
		}
		out = append(out, entry)
	}
	if len(out) == 0 {
		return map[string]any{}
	}
	return out
}

func stringsAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
