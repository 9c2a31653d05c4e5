package store

import (
	kongv1 "github.com/kong/kubernetes-configuration/api/configuration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// NewScheme returns a scheme with every type konductor reads or writes: the built-in
// Kubernetes types and Kong's configuration.konghq.com/v1 types.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(kongv1.AddToScheme(s))
	return s
}
