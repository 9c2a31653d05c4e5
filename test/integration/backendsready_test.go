package integration

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// backendsReady stands in for the deployment controller and the kubelet, which envtest does
// not run: until ctx ends, every Deployment in namespaces gets its replicas as Pods (named
// <deployment>-<i>, the template's labels and containers), every Pod there is marked Running
// and Ready through the status subresource, and every Deployment's status says its replicas
// are ready. Nothing runs in those Pods: this only satisfies waits on readiness.
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
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", d.Name, n), Labels: d.Spec.Template.Labels},
				Spec:       *d.Spec.Template.Spec.DeepCopy(),
			}
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
		p.Status.PodIP = fmt.Sprintf("10.244.0.%d", 10+i%200)
		p.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}
		_ = c.Status().Update(ctx, p)
	}
}
