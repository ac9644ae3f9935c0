package server

import runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

// Short aliases for the CRI config types used throughout the package.
type (
	PodSandboxConfig = runtimeapi.PodSandboxConfig
	ContainerConfig  = runtimeapi.ContainerConfig
)
