package dataplane

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// An answer longer than the bound fails, naming the gateway and the request, whether it says
// its length or not; one of exactly the bound is read whole.
func TestBoundedAnswersSize(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		if r.URL.Query().Has("chunked") {
			w.(http.Flusher).Flush() // no Content-Length
		}
		_, _ = io.WriteString(w, strings.Repeat("x", n))
	}))
	defer srv.Close()
	c := &http.Client{Transport: BoundedAnswers(http.DefaultTransport, 100, 10)}
	get := func(query string) (string, error) {
		resp, err := c.Get(srv.URL + "/services?" + query)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	body, err := get("n=100")
	require.NoError(t, err)
	require.Len(t, body, 100)
	body, err = get("n=100&chunked")
	require.NoError(t, err)
	require.Len(t, body, 100)

	_, err = get("n=101")
	require.ErrorContains(t, err, "gateway "+srv.URL+": GET /services: the answer is 101 bytes, more than the 100 konductor reads")
	_, err = get("n=5000&chunked")
	require.ErrorContains(t, err, "gateway "+srv.URL+": GET /services: the answer is longer than the 100 bytes konductor reads")
}

// A listing whose pages never end fails at the bound, naming the gateway; a new listing of
// the same path counts again from its first page.
func TestBoundedAnswersPages(t *testing.T) {
	var served int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served++
		off, _ := strconv.Atoi(r.URL.Query().Get("offset"))
		fmt.Fprintf(w, `{"data":[],"next":"/services?size=1&offset=%d"}`, off+1)
	}))
	defer srv.Close()
	c := &http.Client{Transport: BoundedAnswers(http.DefaultTransport, 1<<20, 10)}
	list := func() (pages int, err error) {
		path := "/services?size=1"
		for {
			resp, err := c.Get(srv.URL + path)
			if err != nil {
				return pages, err
			}
			pages++
			var page struct{ Next string }
			err = json.NewDecoder(resp.Body).Decode(&page)
			resp.Body.Close()
			if err != nil {
				return pages, err
			}
			path = page.Next
		}
	}
	for range 2 {
		served = 0
		pages, err := list()
		require.ErrorContains(t, err, "gateway "+srv.URL+": GET /services: more than 10 pages")
		require.Equal(t, 10, pages, "ten pages read, the eleventh not asked for")
		require.Equal(t, 10, served)
	}
}
