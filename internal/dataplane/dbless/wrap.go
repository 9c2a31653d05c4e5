package dbless

// wrapConfig is config as the body {"config": "<config>"}: what json.Marshal of that struct
// gives a decoder, without its cost. encoding/json escapes every byte of a multi-megabyte
// configuration through its generic string encoder (and also escapes <, > and &, which JSON
// does not need); only the quote, the backslash and control bytes must be escaped, and valid
// UTF-8, which is all a rendered configuration holds, passes as it is. An invalid UTF-8 byte
// also passes as it is; Kong's decoder then refuses the body rather than reading a replaced
// character.
func wrapConfig(config []byte) []byte {
	const hex = "0123456789abcdef"
	out := make([]byte, 0, len(config)+len(config)/4+16)
	out = append(out, `{"config":"`...)
	start := 0
	for i, c := range config {
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		out = append(out, config[start:i]...)
		switch c {
		case '"', '\\':
			out = append(out, '\\', c)
		case '\n':
			out = append(out, '\\', 'n')
		case '\r':
			out = append(out, '\\', 'r')
		case '\t':
			out = append(out, '\\', 't')
		default:
			out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	out = append(out, config[start:]...)
	return append(out, `"}`...)
}
