package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// pagingServer answers lists like an API server that honours limit and continue: pages of
// the Secrets it holds, at one resourceVersion. It records the requests.
type pagingServer struct {
	secrets  []corev1.Secret
	requests []metav1.ListOptions
	failAt   int // the request (1-based) that fails; 0: none
	// beforeList, when set, runs before each list is answered.
	beforeList func()
}

func (p *pagingServer) lw() *toolscache.ListWatch {
	return &toolscache.ListWatch{
		ListWithContextFunc: func(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			p.requests = append(p.requests, opts)
			if p.beforeList != nil {
				p.beforeList()
			}
			if len(p.requests) == p.failAt {
				return nil, errors.New("the API server is gone")
			}
			start := 0
			if opts.Continue != "" {
				start, _ = strconv.Atoi(opts.Continue)
			}
			end := len(p.secrets)
			if opts.Limit > 0 && start+int(opts.Limit) < end {
				end = start + int(opts.Limit)
			}
			list := &corev1.SecretList{ListMeta: metav1.ListMeta{ResourceVersion: "42"}}
			list.Items = append(list.Items, p.secrets[start:end]...)
			if end < len(p.secrets) {
				list.Continue = strconv.Itoa(end)
				remaining := int64(len(p.secrets) - end)
				list.RemainingItemCount = &remaining
			}
			return list, nil
		},
		WatchFuncWithContext: func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			p.requests = append(p.requests, opts)
			return watch.NewFake(), nil
		},
	}
}

func secretsOf(n int) []corev1.Secret {
	out := make([]corev1.Secret, n)
	for i := range out {
		out[i] = corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("s%d", i)},
			Data:       map[string][]byte{"payload": []byte("big")},
		}
	}
	return out
}

// dropData is a transform like SecretPayloads': the data goes, a mark says so.
func dropData(in any) (any, error) {
	s := in.(*corev1.Secret)
	s.Data = nil
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	s.Labels["transformed"] = "yes"
	return s, nil
}

func TestPagedListReadsPagesAndTransformsEachBeforeTheNext(t *testing.T) {
	server := &pagingServer{secrets: secretsOf(7)}
	var transformed int
	transform := func(in any) (any, error) {
		transformed++
		return dropData(in)
	}
	// Every object of the pages already read is transformed when the next page is asked for.
	server.beforeList = func() {
		require.Equal(t, 3*(len(server.requests)-1), transformed, "objects transformed before request %d", len(server.requests))
	}
	lw := PagedList(server.lw(), 3, transform)

	// The reflector's first list: resourceVersion "0" (which the API server answers from its
	// watch cache in one piece) and the pager's limit of 500.
	got, err := lw.List(metav1.ListOptions{ResourceVersion: "0", Limit: 500, LabelSelector: "a=b"})
	require.NoError(t, err)

	require.Len(t, server.requests, 3, "7 Secrets in pages of 3")
	for i, req := range server.requests {
		require.Empty(t, req.ResourceVersion, "request %d: the most recent state, which the API server pages", i)
		require.Empty(t, req.ResourceVersionMatch, "request %d", i)
		require.Equal(t, int64(3), req.Limit, "request %d", i)
		require.Equal(t, "a=b", req.LabelSelector, "request %d: the caller's selector stays", i)
	}
	require.Empty(t, server.requests[0].Continue)
	require.Equal(t, "3", server.requests[1].Continue)
	require.Equal(t, "6", server.requests[2].Continue)

	list := got.(*corev1.SecretList)
	require.Equal(t, "42", list.ResourceVersion, "the snapshot's resourceVersion, for the watch that follows")
	require.Empty(t, list.Continue)
	require.Nil(t, list.RemainingItemCount)
	require.Len(t, list.Items, 7)
	for i, s := range list.Items {
		require.Equal(t, fmt.Sprintf("s%d", i), s.Name, "in the API server's order")
		require.Nil(t, s.Data, "%s transformed", s.Name)
		require.Equal(t, "yes", s.Labels["transformed"])
	}
	require.Equal(t, 7, transformed)
	for i := range server.secrets {
		require.NotNil(t, server.secrets[i].Data, "the server's objects are not the ones transformed")
	}
}

func TestPagedListOnePage(t *testing.T) {
	server := &pagingServer{secrets: secretsOf(2)}
	got, err := PagedList(server.lw(), 50, dropData).List(metav1.ListOptions{ResourceVersion: "17"})
	require.NoError(t, err)
	require.Len(t, server.requests, 1)
	require.Empty(t, server.requests[0].ResourceVersion, "a later list (the reflector's relist) asks for the most recent state too")
	require.Len(t, got.(*corev1.SecretList).Items, 2)

	server = &pagingServer{}
	got, err = PagedList(server.lw(), 50, dropData).List(metav1.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, got.(*corev1.SecretList).Items)
	require.Equal(t, "42", got.(*corev1.SecretList).ResourceVersion)
}

func TestPagedListFailsWhenAPageFails(t *testing.T) {
	server := &pagingServer{secrets: secretsOf(7), failAt: 2}
	_, err := PagedList(server.lw(), 3, dropData).List(metav1.ListOptions{})
	require.ErrorContains(t, err, "the API server is gone", "no partial list: the reflector lists again")
	require.Len(t, server.requests, 2)

	server = &pagingServer{secrets: secretsOf(1)}
	_, err = PagedList(server.lw(), 3, func(any) (any, error) { return nil, errors.New("bad object") }).List(metav1.ListOptions{})
	require.ErrorContains(t, err, "bad object")
}

func TestPagedListPassesWatchesThrough(t *testing.T) {
	server := &pagingServer{}
	lw := PagedList(server.lw(), 3, dropData).(toolscache.ListerWatcherWithContext)
	w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "42", AllowWatchBookmarks: true})
	require.NoError(t, err)
	w.Stop()
	require.Equal(t, []metav1.ListOptions{{ResourceVersion: "42", AllowWatchBookmarks: true}}, server.requests,
		"a watch resumes at the resourceVersion asked")
}

// The payload keeper's transform accepts Secrets it transformed already: PagedList transforms
// a listed Secret and the informer transforms it again.
func TestSecretPayloadsTransformTwice(t *testing.T) {
	p := NewSecretPayloads(nil)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "unrelated"}, Data: map[string][]byte{"k": []byte("v")}}
	once, err := p.Transform(s)
	require.NoError(t, err)
	onceCopy := once.(*corev1.Secret).DeepCopy()
	twice, err := p.Transform(once)
	require.NoError(t, err)
	require.Equal(t, onceCopy, twice.(*corev1.Secret))
	require.True(t, PayloadNotCached(twice.(*corev1.Secret)))
	require.Nil(t, twice.(*corev1.Secret).Data)
}
