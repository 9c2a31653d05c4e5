package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// JSON is doc, a JSON document (a configuration, Kong's answer to one), with its secrets
// masked: every string value goes through String, and a string or number (or those of a
// list) under a field named like a secret is masked whole, whatever its length; a number
// String would mask becomes the string Mask. Keys, structure and order are kept; other
// numbers keep their text.
//
// Masking the document's text with String instead would miss the secrets JSON escapes (a
// quote, a backslash, the newlines of a PEM key's lines, <, > and &), and could break the
// document where a secret equals one of its tokens (a password "true", "services"). A doc
// that is not JSON is masked as text.
func (r *Redactor) JSON(doc []byte) []byte {
	out, err := r.maskJSON(doc)
	if err != nil {
		return []byte(r.String(string(doc)))
	}
	return out
}

// frame is an open object or array: how many tokens it has written (an object's keys and
// values alternate, so an odd count ends on a key) and the key of the value being written.
type frame struct {
	object bool
	n      int
	key    string
}

func (r *Redactor) maskJSON(doc []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	out := make([]byte, 0, len(doc)+len(doc)/8)
	var stack []frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			out = append(out, byte(d))
			continue
		}
		// A key, or a value: its separator, and whether it is a key or the value of a
		// secret-named field (directly, or as an item of a list under one).
		isKey, secret := false, false
		if len(stack) > 0 {
			top := &stack[len(stack)-1]
			switch {
			case top.object && top.n%2 == 1:
				out = append(out, ':')
			case top.n > 0:
				out = append(out, ',')
			}
			top.n++
			isKey = top.object && top.n%2 == 1
			if !isKey && top.object {
				secret = secretField.MatchString(top.key)
			}
			if !top.object && len(stack) > 1 {
				if parent := stack[len(stack)-2]; parent.object {
					secret = secretField.MatchString(parent.key)
				}
			}
		}
		switch v := tok.(type) {
		case json.Delim:
			out = append(out, byte(v))
			stack = append(stack, frame{object: v == '{'})
		case string:
			if isKey {
				stack[len(stack)-1].key = v
			} else if secret {
				v = Mask
			} else {
				v = r.String(v)
			}
			b, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			out = append(out, b...)
		case json.Number:
			// A number is a secret's value too (a configFrom Secret's PIN): then it is
			// masked, as a string.
			if secret || r.String(string(v)) != string(v) {
				out = append(out, `"`+Mask+`"`...)
			} else {
				out = append(out, v...)
			}
		case bool:
			if v {
				out = append(out, "true"...)
			} else {
				out = append(out, "false"...)
			}
		case nil:
			out = append(out, "null"...)
		}
	}
	return out, nil
}
