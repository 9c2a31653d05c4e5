package dataplane

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"
)

// listenerCountingInformer counts the listeners registered on it. Like controller-runtime's
// informer of several namespaces (--watch-namespace), it cannot say whether it runs.
type listenerCountingInformer struct {
	*controllertest.FakeInformer
	listeners int
}

func (i *listenerCountingInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	i.listeners++
	return i.FakeInformer.AddEventHandler(h)
}

// oneInformer hands out the same informer for every kind.
type oneInformer struct {
	informertest.FakeInformers
	inf *listenerCountingInformer
}

func (o *oneInformer) GetInformer(context.Context, client.Object, ...cache.InformerGetOption) (cache.Informer, error) {
	return o.inf, nil
}

// eventCounter counts the events it is told of.
type eventCounter struct{ adds, updates, deletes int }

func (c *eventCounter) handler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.adds++ },
		UpdateFunc: func(any, any) { c.updates++ },
		DeleteFunc: func(any) { c.deletes++ },
	}
}

// The handlers added while the controller is assembled share one listener per informer
// (client-go gives each listener a 16 KB ring buffer and two goroutines), and each is still
// told of every event once, in the order they were added.
func TestBarrierHandlersShareOneListenerPerInformer(t *testing.T) {
	inf := &listenerCountingInformer{FakeInformer: controllertest.NewFakeInformer()}
	b, err := NewInformerBarrier(context.Background(), &oneInformer{inf: inf}, &netv1.Ingress{})
	require.NoError(t, err)
	var first, second eventCounter
	var order []string
	require.NoError(t, b.AddEventHandler(first.handler()))
	require.NoError(t, b.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(any) { order = append(order, "second") }}))
	require.NoError(t, b.AddEventHandler(second.handler()))
	require.NoError(t, b.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(any) { order = append(order, "fourth") }}))
	require.Equal(t, 1, inf.listeners, "one listener for all the handlers")

	ing := &netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}}
	inf.Add(ing)
	inf.Update(ing, ing)
	inf.Delete(ing)
	for _, c := range []eventCounter{first, second} {
		require.Equal(t, eventCounter{adds: 1, updates: 1, deletes: 1}, c)
	}
	require.Equal(t, []string{"second", "fourth"}, order)
}

// A handler added once the barrier is sealed (the informers start) is registered on each itself, so that the informer
// tells it of the objects it already holds (a listener that joined the shared one would
// only see what changes from then on); a late informer gets the shared listener and it.
func TestBarrierHandlerAddedAfterStartIsToldOfWhatIsThere(t *testing.T) {
	inf := &listenerCountingInformer{FakeInformer: controllertest.NewFakeInformer()}
	b, err := NewInformerBarrier(context.Background(), &oneInformer{inf: inf}, &netv1.Ingress{})
	require.NoError(t, err)
	var early, later eventCounter
	require.NoError(t, b.AddEventHandler(early.handler()))
	b.Seal()
	require.NoError(t, b.AddEventHandler(later.handler()))
	require.Equal(t, 2, inf.listeners, "the shared listener, and the late handler's own")

	inf.Add(&netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}})
	require.Equal(t, eventCounter{adds: 1}, early)
	require.Equal(t, eventCounter{adds: 1}, later)

	lateInf := &listenerCountingInformer{FakeInformer: controllertest.NewFakeInformer()}
	require.NoError(t, b.AddLateInformer(lateInf))
	require.Equal(t, 2, lateInf.listeners, "the shared listener and the handler added after start")
	lateInf.Add(&netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}})
	require.Equal(t, eventCounter{adds: 2}, early)
	require.Equal(t, eventCounter{adds: 2}, later)
}
