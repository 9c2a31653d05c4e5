//go:build tools

// Package tools pins modules that the project uses before code imports them.
package tools

import (
	_ "github.com/go-logr/logr"
	_ "github.com/google/uuid"
	_ "github.com/kong/go-database-reconciler/pkg/diff"
	_ "github.com/kong/go-database-reconciler/pkg/dump"
	_ "github.com/kong/go-database-reconciler/pkg/file"
	_ "github.com/kong/go-database-reconciler/pkg/state"
	_ "github.com/kong/go-database-reconciler/pkg/utils"
	_ "github.com/kong/go-kong/kong"
	_ "github.com/kong/kubernetes-configuration/api/configuration/v1"
	_ "github.com/kong/kubernetes-configuration/api/configuration/v1beta1"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/stretchr/testify/require"
	_ "k8s.io/apimachinery/pkg/util/wait"
	_ "sigs.k8s.io/controller-runtime"
	_ "sigs.k8s.io/controller-runtime/pkg/client/fake"
	_ "sigs.k8s.io/controller-runtime/pkg/envtest"
	_ "sigs.k8s.io/gateway-api/apis/v1"
	_ "sigs.k8s.io/yaml"
)
