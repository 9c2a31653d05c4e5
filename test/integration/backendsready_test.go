package integration

import (
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// backendsReady stands in for the deployment controller, the kubelet and the EndpointSlice
// controller, which envtest does not run: until ctx ends, every Deployment in namespaces gets
// its replicas as Pods (named <deployment>-<template hash>-<i> as a ReplicaSet names them, the
// template's labels and containers), every
// Pod there is marked Running and Ready through the status subresource with an address of its
// own (fakePods says whose an address is), every Deployment's status says its replicas are
// ready, and every Service with a selector gets an EndpointSlice of its ready Pods. Nothing
// runs in those Pods: a test that sends requests answers for them in process (fakePods).
func backendsReady(ctx context.Context, c client.Client, namespaces []string, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		for _, ns := range namespaces {
			markBackendsReady(ctx, c, ns)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// markBackendsReady is one pass of backendsReady over ns; errors are left to the next pass.
func markBackendsReady(ctx context.Context, c client.Client, ns string) {
	var deployments appsv1.DeploymentList
	if c.List(ctx, &deployments, client.InNamespace(ns)) != nil {
		return
	}
	for i := range deployments.Items {
		d := &deployments.Items[i]
		replicas := int32(1)
		if d.Spec.Replicas != nil {
			replicas = *d.Spec.Replicas
		}
		for n := range replicas {
			pod := &corev1.Pod{
				// The suite reads a backend's name off its pod's by dropping the last two
				// dash-separated parts (weight.extractBackendName), as a ReplicaSet names them.
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%s-%d", d.Name, templateHash(d), n), Labels: d.Spec.Template.Labels},
				Spec:       *d.Spec.Template.Spec.DeepCopy(),
			}
			pod.Spec.NodeName = fakeNodeName
			if err := c.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
				continue
			}
		}
		if d.Status.ReadyReplicas != replicas || d.Status.ObservedGeneration != d.Generation {
			d.Status = appsv1.DeploymentStatus{
				ObservedGeneration: d.Generation, Replicas: replicas, UpdatedReplicas: replicas,
				ReadyReplicas: replicas, AvailableReplicas: replicas,
				Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"}},
			}
			_ = c.Status().Update(ctx, d)
		}
	}
	var pods corev1.PodList
	if c.List(ctx, &pods, client.InNamespace(ns)) != nil {
		return
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodRunning {
			continue
		}
		now := metav1.Now()
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP = fakePods.address(p)
		p.Status.PodIPs = []corev1.PodIP{{IP: p.Status.PodIP}}
		p.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}
		_ = c.Status().Update(ctx, p)
	}
	writeEndpointSlices(ctx, c, ns, pods.Items)
}

// fakeNodeName is the node backendsReady's Pods are scheduled on (an EndpointSlice the suite
// writes names it, and the API server refuses an empty one).
const fakeNodeName = "konductor-test-node"

// templateHash stands in for the pod-template-hash a ReplicaSet puts in its Pods' names.
func templateHash(d *appsv1.Deployment) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(d.Namespace + "/" + d.Name))
	return fmt.Sprintf("%08x", h.Sum32())
}

// fakePod is a Pod backendsReady made Running: who answers at its address.
type fakePod struct {
	Namespace, Name string
	// GRPC: its container runs the echo server's gRPC mode (GRPC_ECHO_SERVER).
	GRPC bool
	// TLSSecret is the Secret whose certificate the echo server serves TLS with on
	// echoTLSPort (TLS_SERVER_CERT, mounted from a Secret volume), "" for none.
	TLSSecret string
	// Env is its containers' environment (literal values; "" for one taken from elsewhere),
	// Image the first container's image, Secret the Secret of its first secret volume: what
	// the stream backends answer as (conformance_streams_test.go).
	Env    map[string]string
	Image  string
	Secret string
}

// echoTLSPort is the port the echo server serves TLS on (its HTTPS_PORT default).
const echoTLSPort = 8443

// fakePods gives each Pod backendsReady marks Running an address of its own and remembers
// whose it is.
var fakePods = &podAddresses{byName: map[string]string{}, byIP: map[string]fakePod{}}

type podAddresses struct {
	mu     sync.Mutex
	byName map[string]string
	byIP   map[string]fakePod
}

func (a *podAddresses) address(p *corev1.Pod) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	key := p.Namespace + "/" + p.Name
	if ip, ok := a.byName[key]; ok {
		return ip
	}
	n := len(a.byName)
	ip := fmt.Sprintf("10.244.%d.%d", n/250, n%250+1)
	pod := fakePod{Namespace: p.Namespace, Name: p.Name, Env: map[string]string{}}
	for _, c := range p.Spec.Containers {
		if pod.Image == "" {
			pod.Image = c.Image
		}
		for _, e := range c.Env {
			pod.GRPC = pod.GRPC || e.Name == "GRPC_ECHO_SERVER"
			if e.Name == "TLS_SERVER_CERT" {
				pod.TLSSecret = mountedSecret(p, c, e.Value)
			}
			pod.Env[e.Name] = e.Value
		}
	}
	for _, v := range p.Spec.Volumes {
		if v.Secret != nil && pod.Secret == "" {
			pod.Secret = v.Secret.SecretName
		}
	}
	a.byName[key], a.byIP[ip] = ip, pod
	return ip
}

// pod is whose ip is.
func (a *podAddresses) pod(ip string) (fakePod, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p, ok := a.byIP[ip]
	return p, ok
}

// writeEndpointSlices gives every Service of ns with a selector one EndpointSlice of the ready
// Pods it selects, with the Service's target ports (a named one read off the first Pod's
// containers).
func writeEndpointSlices(ctx context.Context, c client.Client, ns string, pods []corev1.Pod) {
	var services corev1.ServiceList
	if c.List(ctx, &services, client.InNamespace(ns)) != nil {
		return
	}
	for _, svc := range services.Items {
		if len(svc.Spec.Selector) == 0 {
			continue
		}
		selector := labels.SelectorFromSet(svc.Spec.Selector)
		ready := true
		var endpoints []discoveryv1.Endpoint
		var selected []corev1.Pod
		for _, p := range pods {
			if p.DeletionTimestamp != nil || p.Status.PodIP == "" || !selector.Matches(labels.Set(p.Labels)) {
				continue
			}
			selected = append(selected, p)
			name := p.Name
			endpoints = append(endpoints, discoveryv1.Endpoint{Addresses: []string{p.Status.PodIP},
				Conditions: discoveryv1.EndpointConditions{Ready: &ready},
				TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: name}})
		}
		var ports []discoveryv1.EndpointPort
		for _, sp := range svc.Spec.Ports {
			port := sp.TargetPort.IntVal
			if sp.TargetPort.StrVal != "" && len(selected) > 0 {
				for _, ct := range selected[0].Spec.Containers {
					for _, cp := range ct.Ports {
						if cp.Name == sp.TargetPort.StrVal {
							port = cp.ContainerPort
						}
					}
				}
			}
			if port == 0 {
				port = sp.Port
			}
			name, protocol := sp.Name, sp.Protocol
			ports = append(ports, discoveryv1.EndpointPort{Name: &name, Port: &port, Protocol: &protocol, AppProtocol: sp.AppProtocol})
		}
		want := &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: svc.Name + "-backends", Labels: map[string]string{
				discoveryv1.LabelServiceName: svc.Name, discoveryv1.LabelManagedBy: "backendsready.konductor.test"}},
			AddressType: discoveryv1.AddressTypeIPv4, Endpoints: endpoints, Ports: ports,
		}
		var have discoveryv1.EndpointSlice
		if err := c.Get(ctx, client.ObjectKeyFromObject(want), &have); apierrors.IsNotFound(err) {
			_ = c.Create(ctx, want)
			continue
		} else if err != nil {
			continue
		}
		if !maps.Equal(have.Labels, want.Labels) || fmt.Sprint(have.Endpoints) != fmt.Sprint(want.Endpoints) || fmt.Sprint(have.Ports) != fmt.Sprint(want.Ports) {
			have.Labels, have.Endpoints, have.Ports = want.Labels, want.Endpoints, want.Ports
			_ = c.Update(ctx, &have)
		}
	}
}

// mountedSecret is the Secret of the volume c mounts at a directory holding file, "" when
// that is no Secret volume.
func mountedSecret(p *corev1.Pod, c corev1.Container, file string) string {
	for _, m := range c.VolumeMounts {
		if !strings.HasPrefix(file, strings.TrimSuffix(m.MountPath, "/")+"/") {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.Name == m.Name && v.Secret != nil {
				return v.Secret.SecretName
			}
		}
	}
	return ""
}
