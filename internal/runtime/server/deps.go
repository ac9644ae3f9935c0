package server

import (
	"context"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/berth/berth/internal/runtime/cgroupstats"
	"github.com/berth/berth/internal/runtime/image"
	"github.com/berth/berth/internal/runtime/network"
	"github.com/berth/berth/internal/runtime/pause"
	"github.com/berth/berth/internal/runtime/spec"
)

// The server consumes the image store, the spec generator and the network
// through these narrow interfaces; internal/runtime wires the real packages
// in, and unit tests substitute small fakes.

// Image is a resolved local image.
type Image struct {
	ID          string // config digest, "sha256:..."
	RepoTags    []string
	RepoDigests []string
	Config      *v1.ConfigFile
}

// Images is what the CRI layer needs from the image store.
type Images interface {
	// Resolve finds a local image by name, ID or digest reference; a gRPC
	// NotFound error when it is absent.
	Resolve(ctx context.Context, ref string) (Image, error)
	// Ensure resolves ref, pulling it first if it is not present (the pause image).
	Ensure(ctx context.Context, ref string) (Image, error)
	// PrepareRootfs mounts a container's root filesystem and records that
	// the container uses the image; RemoveRootfs undoes both, idempotently.
	PrepareRootfs(ctx context.Context, imageID, containerID string, opts image.RootfsOptions) (string, error)
	RemoveRootfs(ctx context.Context, containerID string) error
	// RecoverRootfs remounts the root filesystems after a restart (a reboot
	// unmounts them) and returns every rootfs ID recorded as in use, so that
	// recovery can release those no sandbox or container owns any more.
	RecoverRootfs(ctx context.Context) (RootfsRecovery, error)
}

// RootfsRecovery is what the image store found on start.
type RootfsRecovery struct {
	InUse  []string         // rootfs IDs whose mount record names an image
	Failed map[string]error // rootfs IDs that could not be remounted, and why
}

// Specs turns CRI configs into OCI specs and pause processes; errors for
// bad configs are gRPC InvalidArgument statuses.
type Specs interface {
	// The server leaves each input's Host zero: what the host offers is
	// the implementation's to fill in.

	// Pause describes the sandbox's pause process, which joins the
	// sandbox's pinned namespaces (in.Namespaces).
	Pause(ctx context.Context, in spec.PauseInput) (*pause.Process, error)
	Container(ctx context.Context, in spec.Input) (*specs.Spec, error)
	// ValidateSandbox checks a pod's hostname and sysctls before anything
	// of it is created.
	ValidateSandbox(cfg *PodSandboxConfig) error
}

// Network attaches sandboxes to the pod network.
type Network interface {
	Setup(ctx context.Context, pod network.Pod) (network.Result, error)
	Teardown(ctx context.Context, pod network.Pod) error
	Ready(ctx context.Context) error
	SetPodCIDR(cidr string) error
}

// WritableLayers is optionally implemented by an Images: where a
// container's writable layer lives, so its disk usage can be measured
// ("" when unknown).
type WritableLayers interface {
	WritableLayer(containerID string) string
}

// CgroupReader samples a process's cgroups and network namespace; the
// host's is cgroupstats.NewHost().
type CgroupReader interface {
	ReadPid(pid int) (cgroupstats.Sample, error)
	ReadNetwork(pid int) ([]cgroupstats.Interface, error)
}
