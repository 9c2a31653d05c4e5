package store

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// SecretListPageSize is how many Secrets one page of the Secrets informer's list holds
// (PagedList). A Secret is at most 1 MB, so a page costs at most about 50 MB while it is
// decoded (its response and its objects), whatever the number of Secrets; 1,000 Secrets are
// 20 requests.
const SecretListPageSize = 50

// PagedList wraps an informer's ListerWatcher so that its lists are read in pages of
// pageSize objects, each object passed through transform as soon as its page is decoded,
// before the next page is asked for. An informer applies its cache transform only once the
// whole list is decoded, and the API server answers an informer's first list (resourceVersion
// "0", from its watch cache) in one response whatever the limit: 1,000 Secrets of 100 KB were
// 487 MB of peak RSS before SecretPayloads.Transform dropped their data (issue #13, memory).
// With PagedList the peak is one page.
//
// Every list asks for the most recent state (resourceVersion unset: a consistent read, which
// the API server pages), whatever resourceVersion the reflector asked: a reflector needs a
// list at least as recent as the one it asked for, never an older one. The continue tokens keep
// the pages one consistent snapshot, whose resourceVersion the returned list carries; when
// they expire (the API server compacted past it) the list fails and the reflector lists again.
// Watches are passed through: a watch event carries one object, transformed by the informer.
//
// transform must accept objects it already transformed (the informer applies its own
// transform, the same, to the list's objects again).
func PagedList(inner toolscache.ListerWatcher, pageSize int64, transform toolscache.TransformFunc) toolscache.ListerWatcher {
	return pagedList{inner: toolscache.ToListerWatcherWithContext(inner), pageSize: pageSize, transform: transform}
}

type pagedList struct {
	inner     toolscache.ListerWatcherWithContext
	pageSize  int64
	transform toolscache.TransformFunc
}

var _ toolscache.ListerWatcherWithContext = pagedList{}

// List and Watch serve callers without a context (client-go's ListerWatcher).
func (l pagedList) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

func (l pagedList) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

func (l pagedList) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return l.inner.WatchWithContext(ctx, opts)
}

func (l pagedList) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	opts.ResourceVersion, opts.ResourceVersionMatch = "", ""
	opts.Limit, opts.Continue = l.pageSize, ""
	var items []runtime.Object
	for {
		page, err := l.inner.ListWithContext(ctx, opts)
		if err != nil {
			return nil, err
		}
		// Each object is copied out of the page (WithAlloc), so that once transformed the
		// page, with every payload it held, is garbage.
		objs, err := meta.ExtractListWithAlloc(page)
		if err != nil {
			return nil, fmt.Errorf("reading a page of a list: %w", err)
		}
		for _, obj := range objs {
			if l.transform != nil {
				out, err := l.transform(obj)
				if err != nil {
					return nil, err
				}
				var ok bool
				if obj, ok = out.(runtime.Object); !ok {
					return nil, fmt.Errorf("the transform of a listed object returned %T", out)
				}
			}
			items = append(items, obj)
		}
		listMeta, err := meta.ListAccessor(page)
		if err != nil {
			return nil, fmt.Errorf("reading a page of a list: %w", err)
		}
		if listMeta.GetContinue() == "" {
			// The last page: it carries the snapshot's resourceVersion, and becomes the
			// whole list.
			if err := meta.SetList(page, items); err != nil {
				return nil, fmt.Errorf("assembling the pages of a list: %w", err)
			}
			listMeta.SetRemainingItemCount(nil)
			return page, nil
		}
		opts.Continue = listMeta.GetContinue()
	}
}
