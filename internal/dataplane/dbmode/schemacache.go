package dbmode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// schemaCache is an http.RoundTripper that remembers GET /schemas/... answers (200 and 404).
// go-database-reconciler's file builder reads the service, route, upstream and target
// schemas on every sync (and the syncer plugin schemas on every plugin change); they change
// only when the Kong version does. The cache watches every GET / answer that passes through
// it (dump reads GET / on each sync) and empties itself when the version or the node changes,
// so it never outlives the Kong it describes. In a workspace go-kong asks both under the
// workspace's prefix: GET /{ws}/schemas/... and, for GET /, GET /{ws}/kong.
type schemaCache struct {
	next    http.RoundTripper
	schemas string // path prefix of the schemas: the admin URL's path [+ /{ws}] + /schemas/
	root    string // path of GET /: the admin URL's path without a trailing slash, or .../{ws}/kong

	mu      sync.Mutex
	node    string // version and node id of the last GET /
	entries map[string]cachedResponse
}

type cachedResponse struct {
	status int
	header http.Header
	body   []byte
}

// response is a fresh *http.Response of the remembered answer, for request r.
func (e cachedResponse) response(r *http.Request) *http.Response {
	return &http.Response{
		Status: fmt.Sprintf("%d %s", e.status, http.StatusText(e.status)), StatusCode: e.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: e.header.Clone(), Body: io.NopCloser(bytes.NewReader(e.body)),
		ContentLength: int64(len(e.body)), Request: r,
	}
}

// readBody reads resp's body and gives resp a new one holding the same bytes, so that the
// caller can keep the answer and still pass it on.
func readBody(resp *http.Response) ([]byte, error) {
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}

// newSchemaCache caches the schemas of the Kong at basePath (the admin URL's path), as
// asked in workspace ("": none).
func newSchemaCache(next http.RoundTripper, basePath, workspace string) *schemaCache {
	if next == nil {
		next = http.DefaultTransport
	}
	prefix := strings.TrimSuffix(basePath, "/")
	root := prefix
	if workspace != "" {
		prefix += "/" + workspace
		root = prefix + "/kong"
	}
	return &schemaCache{next: next, schemas: prefix + "/schemas/", root: root, entries: map[string]cachedResponse{}}
}

func (c *schemaCache) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet {
		return c.next.RoundTrip(r)
	}
	isSchema := strings.HasPrefix(r.URL.Path, c.schemas)
	isRoot := strings.TrimSuffix(r.URL.Path, "/") == c.root
	key := r.URL.String()
	if isSchema {
		c.mu.Lock()
		e, ok := c.entries[key]
		c.mu.Unlock()
		if ok {
			return e.response(r), nil
		}
	}
	resp, err := c.next.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	// A 404 is an answer too: the schema of an entity this Kong version does not have.
	if resp.StatusCode != http.StatusOK && !(isSchema && resp.StatusCode == http.StatusNotFound) {
		return resp, nil
	}
	if !isSchema && !isRoot {
		return resp, nil
	}
	body, err := readBody(resp)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if isSchema {
		c.entries[key] = cachedResponse{status: resp.StatusCode, header: resp.Header.Clone(), body: body}
		return resp, nil
	}
	var root struct {
		Version string `json:"version"`
		NodeID  string `json:"node_id"`
	}
	if json.Unmarshal(body, &root) == nil {
		if node := root.Version + "/" + root.NodeID; node != c.node {
			c.node = node
			clear(c.entries)
		}
	}
	return resp, nil
}
