package server

import runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

// Streamer hands out URLs on the streaming server for exec, attach and
// port-forward (k8s.io/cri-streaming's streaming.Server satisfies it).
type Streamer interface {
	GetExec(*runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error)
	GetAttach(*runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error)
	GetPortForward(*runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error)
}
