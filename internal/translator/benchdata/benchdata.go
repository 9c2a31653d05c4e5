// Package benchdata builds the cluster snapshots that konductor's benchmarks translate (the
// translator's, the admission webhook's), so that their numbers in docs/performance.md are of
// the same objects.
package benchdata

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/konductor/konductor/internal/store"
)

// Snapshot builds n Ingresses, each with its own Service (two ports) and EndpointSlice
// (three ready endpoints), spread over 10 namespaces: a realistic shape for one gateway.
func Snapshot(n int) *store.Snapshot {
	snap := &store.Snapshot{IngressClass: "kong"}
	prefix := netv1.PathTypePrefix
	exact := netv1.PathTypeExact
	class := "kong"
	port := int32(8080)
	proto := corev1.ProtocolTCP
	name := "http"
	for i := 0; i < n; i++ {
		ns := fmt.Sprintf("ns-%d", i%10)
		svc := fmt.Sprintf("svc-%d", i)
		uid := func(kind string) types.UID {
			return types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", len(kind), i))
		}
		backend := netv1.IngressBackend{Service: &netv1.IngressServiceBackend{Name: svc, Port: netv1.ServiceBackendPort{Number: 80}}}
		snap.Ingresses = append(snap.Ingresses, &netv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ing-%d", i), Namespace: ns, UID: uid("Ingress")},
			Spec: netv1.IngressSpec{
				IngressClassName: &class,
				Rules: []netv1.IngressRule{{
					Host: fmt.Sprintf("app-%d.example.com", i),
					IngressRuleValue: netv1.IngressRuleValue{HTTP: &netv1.HTTPIngressRuleValue{Paths: []netv1.HTTPIngressPath{
						{Path: "/", PathType: &prefix, Backend: backend},
						{Path: "/api/v1", PathType: &prefix, Backend: backend},
						{Path: "/healthz", PathType: &exact, Backend: backend},
					}}},
				}},
			},
		})
		snap.Services = append(snap.Services, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: svc, Namespace: ns, UID: uid("Service")},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
				{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP},
				{Name: "metrics", Port: 9090, TargetPort: intstr.FromInt32(9090), Protocol: corev1.ProtocolTCP},
			}},
		})
		es := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: svc + "-abcde", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}},
		}
		for e := 0; e < 3; e++ {
			a := i*3 + e // distinct, valid addresses (i%256+e overflowed the last octet)
			es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.%d.%d.%d", a/65536%256, a/256%256, a%256)}})
		}
		snap.EndpointSlices = append(snap.EndpointSlices, es)
	}
	return snap
}

// ProcessCPU is the CPU time the process used so far (user and system), in nanoseconds: the
// benchmarks' cpu-ms/op, which the machine's other load does not inflate as it does ns/op.
func ProcessCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// SizesEnv names the cluster sizes (numbers of Ingresses, comma-separated) that the scale
// benchmarks run at instead of their defaults: `make bench-scale` sets it to 3,000 up to
// 100,000, which an API server on this machine cannot be filled with in a session's time
// (issue #45), while a benchmark of the controller's own share of a change can.
const SizesEnv = "KONDUCTOR_BENCH_INGRESSES"

// Sizes is the cluster sizes of SizesEnv, or defaults when it is unset. A value that is not
// a positive number panics: a benchmark run with sizes it did not ask for measures nothing.
func Sizes(defaults ...int) []int {
	v := os.Getenv(SizesEnv)
	if v == "" {
		return defaults
	}
	var sizes []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			panic(fmt.Sprintf("%s=%q: %q is not a number of Ingresses", SizesEnv, v, f))
		}
		sizes = append(sizes, n)
	}
	return sizes
}
