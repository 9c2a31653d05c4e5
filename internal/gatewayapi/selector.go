package gatewayapi

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func metaLabelSelector(ns *gatewayv1.RouteNamespaces) (labels.Selector, error) {
	return metav1.LabelSelectorAsSelector(ns.Selector)
}
