package konnect

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// apiClient calls the control plane's /v1/ API (nodes, licenses) with the client certificate.
type apiClient struct {
	base string // Options.BaseURL()
	http *http.Client
}

func newAPIClient(o Options) *apiClient { return &apiClient{base: o.BaseURL(), http: o.HTTPClient()} }

// statusError is an answer other than 2xx.
type statusError struct {
	method, path string
	code         int
	body         string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("Konnect %s %s: %d %s", e.method, e.path, e.code, e.body)
}

// do sends body (JSON, when not nil) and decodes a 2xx answer into out (when not nil).
func (c *apiClient) do(ctx context.Context, method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("Konnect %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &statusError{method: method, path: path, code: resp.StatusCode, body: string(bytes.TrimSpace(b))}
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("Konnect %s %s: decoding the answer: %w", method, path, err)
		}
	}
	return nil
}
