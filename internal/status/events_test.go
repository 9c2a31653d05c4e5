package status

import (
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/translator"
)

// Every event the sync loop's trigger judges is counted by kind and outcome, and a dropped
// one is logged at V(1) with the object and why (issue #42); one that asks for a round, or
// replays the initial list, is counted and not logged.
func TestEventCounterCountsAndLogsDrops(t *testing.T) {
	reg := prometheus.NewRegistry()
	var logged []string
	c := NewEventCounter(reg, funcr.New(func(_, args string) { logged = append(logged, args) }, funcr.Options{Verbosity: 1}))
	r := &translator.Relevance{IngressClass: "kong"}
	r.SetGraph(translator.Build(nil, translator.Options{}).Graph) // nothing is referred to
	trigger := dataplane.NewTrigger()
	h := trigger.JudgedEventHandler(r, c).(toolscache.ResourceEventHandlerDetailedFuncs)

	other := "other"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "unused", ResourceVersion: "1"}}
	h.AddFunc(secret, true)
	h.AddFunc(&netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "elsewhere"}, Spec: netv1.IngressSpec{IngressClassName: &other}}, false)
	h.UpdateFunc(secret, secret.DeepCopy())
	h.DeleteFunc(toolscache.DeletedFinalStateUnknown{Obj: &netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "served"}}})

	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP konductor_events_total Kubernetes informer events the sync loop was told of, by kind and outcome: relevant (it asked for a round), or why it did not (same_content, status_only, other_class, not_referred), or initial_list.
# TYPE konductor_events_total counter
konductor_events_total{kind="Ingress",outcome="other_class"} 1
konductor_events_total{kind="Ingress",outcome="relevant"} 1
konductor_events_total{kind="Secret",outcome="initial_list"} 1
konductor_events_total{kind="Secret",outcome="same_content"} 1
`), "konductor_events_total"))
	require.Equal(t, []string{
		`"level"=1 "msg"="event dropped: it cannot change the translation" "kind"="Ingress" "namespace"="ns" "name"="elsewhere" "why"="other_class"`,
		`"level"=1 "msg"="event dropped: it cannot change the translation" "kind"="Secret" "namespace"="ns" "name"="unused" "why"="same_content"`,
	}, logged)
	select {
	case <-trigger.C():
	default:
		t.Fatal("the relevant event (the served Ingress deleted) asked for a round")
	}
}

// BenchmarkEventPath is one informer event of a served Service updated to the same content
// through the sync loop's handler: "filtered" as before issue #42 (Relevance's answer only),
// "counted" as now (its verdict, counted in konductor_events_total; the debug line off).
func BenchmarkEventPath(b *testing.B) {
	r := &translator.Relevance{IngressClass: "kong"}
	r.SetGraph(translator.Build(nil, translator.Options{}).Graph)
	old := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc", ResourceVersion: "1"}}
	now := old.DeepCopy()
	now.ResourceVersion = "2"
	for _, mode := range []string{"filtered", "counted"} {
		b.Run(mode, func(b *testing.B) {
			trigger := dataplane.NewTrigger()
			h := trigger.FilteredEventHandler(r)
			if mode == "counted" {
				h = trigger.JudgedEventHandler(r, NewEventCounter(prometheus.NewRegistry(), logr.Discard()))
			}
			b.ReportAllocs()
			for b.Loop() {
				h.OnUpdate(old, now)
			}
		})
	}
}
