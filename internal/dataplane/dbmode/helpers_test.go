package dbmode

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/kongstate"
	"github.com/konductor/konductor/internal/store"
	"github.com/konductor/konductor/internal/translator"
)

// app is one Ingress with its Service and EndpointSlice.
type app struct {
	name string
	path string // default "/"
	host string // default <name>.example.com
	pt   networkingv1.PathType
}

func uid(kind string, i int) types.UID {
	return types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012d", len(kind), i))
}

// objects returns the Kubernetes objects of apps, all in namespace "default".
func objects(apps ...app) []client.Object {
	var out []client.Object
	for i, a := range apps {
		path, host, pt := a.path, a.host, a.pt
		if path == "" {
			path = "/"
		}
		if host == "" {
			host = a.name + ".example.com"
		}
		if pt == "" {
			pt = networkingv1.PathTypePrefix
		}
		out = append(out,
			&networkingv1.Ingress{
				ObjectMeta: metav1.ObjectMeta{Name: a.name, Namespace: "default", UID: uid("Ingress", i)},
				Spec: networkingv1.IngressSpec{
					IngressClassName: ptr.To("kong"),
					Rules: []networkingv1.IngressRule{{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{
						HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
							Path: path, PathType: &pt,
							Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
								Name: a.name, Port: networkingv1.ServiceBackendPort{Number: 80},
							}},
						}}},
					}}},
				},
			},
			&corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: a.name, Namespace: "default", UID: uid("Service", i)},
				Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{
					Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP,
				}}},
			},
			&discoveryv1.EndpointSlice{
				ObjectMeta: metav1.ObjectMeta{
					Name: a.name + "-abc", Namespace: "default",
					Labels: map[string]string{discoveryv1.LabelServiceName: a.name},
				},
				AddressType: discoveryv1.AddressTypeIPv4,
				Ports:       []discoveryv1.EndpointPort{{Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
				Endpoints: []discoveryv1.Endpoint{{
					Addresses:  []string{fmt.Sprintf("10.%d.%d.%d", i/65536%256, i/256%256, i%256)},
					Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
				}},
			},
		)
	}
	return out
}

func apps(n int) []app {
	out := make([]app, n)
	for i := range out {
		out[i] = app{name: fmt.Sprintf("app-%05d", i)}
	}
	return out
}

// translate runs the controller's store and translator over objs.
func translate(tb testing.TB, objs []client.Object) *kongstate.State {
	tb.Helper()
	st, err := store.NewForObjects(objs, store.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	snap, err := st.Snapshot(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	s, problems := translator.Translate(snap, translator.Options{})
	for _, p := range problems {
		tb.Logf("translation problem: %s", p.String())
	}
	return s
}

func target(s *kongstate.State) *dataplane.Target { return &dataplane.Target{State: s} }

// newKong starts a database-backed emulator and a Gateway for it.
func newKong(tb testing.TB, opts Options) (*kongemu.Emulator, *Gateway) {
	tb.Helper()
	e := kongemu.New(kongemu.Options{Mode: kongemu.Postgres})
	srv, err := e.Start()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = srv.Close() })
	g, err := New(srv.URL, &http.Client{}, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return e, g
}

// writes counts the state-changing requests in an audit slice, by method.
func writes(entries []kongemu.AuditEntry) map[string]int {
	out := map[string]int{}
	for _, a := range entries {
		out[a.Method]++
	}
	return out
}

// nonListRequests returns the requests of a counter map that are not collection reads.
func nonListRequests(before, after map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			m, p, _ := strings.Cut(k, " ")
			if m == http.MethodGet && isListPath(p) {
				continue
			}
			out[k] = d
		}
	}
	return out
}

// isListPath: /services, /upstreams/{id}/targets, ... (a collection, not one entity).
func isListPath(p string) bool {
	segs := strings.Split(strings.Trim(p, "/"), "/")
	return len(segs) == 1 && segs[0] != "" && segs[0] != "schemas" || len(segs) == 3
}
