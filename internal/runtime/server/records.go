package server

import (
	"encoding/json"
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/protobuf/encoding/protojson"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// sandbox is everything the runtime remembers about one pod sandbox.
type sandbox struct {
	ID             string                     `json:"id"`
	Config         *PodSandboxConfig          `json:"-"`
	State          runtimeapi.PodSandboxState `json:"state"`
	CreatedAt      int64                      `json:"createdAt"` // unix nanoseconds
	RuntimeHandler string                     `json:"runtimeHandler,omitempty"`
	NetNS          string                     `json:"netns,omitempty"` // "" with host networking
	IP             string                     `json:"ip,omitempty"`
	AdditionalIPs  []string                   `json:"additionalIPs,omitempty"`
	Dir            string                     `json:"dir"`           // resolv.conf, hostname, hosts, shm
	Pid            int                        `json:"pid,omitempty"` // the pause process; 0 without one
	ImageID        string                     `json:"imageID"`       // the pause image; "" without one
	Pause          pauseMode                  `json:"pause"`
	UTSNS          string                     `json:"utsns,omitempty"` // "" with host networking (or a pause container's)
	IPCNS          string                     `json:"ipcns,omitempty"` // "" with host IPC (or a pause container's)
	// UserNS is the pod's pinned user namespace, which owns its other
	// namespaces; "" for a pod in the host's (see spec.UserNamespace).
	UserNS string `json:"userns,omitempty"`
	// Stopped is set once a StopPodSandbox has completed, so NRI plugins
	// hear of the stop once however often it is asked for.
	Stopped bool `json:"stopped,omitempty"`
}

// hasPause reports whether the sandbox has a pause process, which holds
// its PID namespace.
func (s *sandbox) hasPause() bool { return s.Pause != pauseNone }

// container is everything the runtime remembers about one container.
type container struct {
	ID         string                         `json:"id"`
	SandboxID  string                         `json:"sandboxID"`
	Config     *ContainerConfig               `json:"-"`
	State      runtimeapi.ContainerState      `json:"state"`
	ImageID    string                         `json:"imageID"`
	ImageRef   string                         `json:"imageRef"` // repo digest, or the ID
	LogPath    string                         `json:"logPath,omitempty"`
	BundleDir  string                         `json:"bundleDir"`
	CreatedAt  int64                          `json:"createdAt"`
	StartedAt  int64                          `json:"startedAt,omitempty"`
	FinishedAt int64                          `json:"finishedAt,omitempty"`
	ExitCode   int32                          `json:"exitCode"`
	Reason     string                         `json:"reason,omitempty"`
	Message    string                         `json:"message,omitempty"`
	Resources  *runtimeapi.ContainerResources `json:"-"`
	// User is the identity the container's process runs as (from its spec).
	User *specs.User `json:"user,omitempty"`
	// ImageVolumes are the rootfs IDs of the container's image volumes.
	ImageVolumes []string `json:"imageVolumes,omitempty"`
	// IDMapped are the volumes StartContainer attaches idmapped clones of,
	// host path by attachment (spec.IDMappedMounts).
	IDMapped map[string]string `json:"idmapped,omitempty"`
}

func sandboxName(m *runtimeapi.PodSandboxMetadata) string {
	return fmt.Sprintf("%s_%s_%s_%d", m.GetName(), m.GetNamespace(), m.GetUid(), m.GetAttempt())
}

func (c *container) nameKey() string {
	return fmt.Sprintf("%s/%s_%d", c.SandboxID, c.Config.GetMetadata().GetName(), c.Config.GetMetadata().GetAttempt())
}

// The CRI configs are protobuf messages, so they are persisted with protojson
// beside the plain fields.

func (s sandbox) MarshalJSON() ([]byte, error) {
	type plain sandbox
	cfg, err := protojson.Marshal(s.Config)
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		plain
		Config json.RawMessage `json:"config"`
	}{plain(s), cfg})
}

func (s *sandbox) UnmarshalJSON(data []byte) error {
	type plain sandbox
	var v struct {
		plain
		legacyPause
		Config json.RawMessage `json:"config"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*s = sandbox(v.plain)
	if err := s.resolvePause(v.legacyPause); err != nil {
		return err
	}
	s.Config = &PodSandboxConfig{}
	return protojson.Unmarshal(v.Config, s.Config)
}

func (c container) MarshalJSON() ([]byte, error) {
	type plain container
	cfg, err := protojson.Marshal(c.Config)
	if err != nil {
		return nil, err
	}
	res, err := protojson.Marshal(c.Resources)
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		plain
		Config    json.RawMessage `json:"config"`
		Resources json.RawMessage `json:"resources"`
	}{plain(c), cfg, res})
}

func (c *container) UnmarshalJSON(data []byte) error {
	type plain container
	var v struct {
		plain
		Config    json.RawMessage `json:"config"`
		Resources json.RawMessage `json:"resources"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*c = container(v.plain)
	c.Config = &ContainerConfig{}
	if err := protojson.Unmarshal(v.Config, c.Config); err != nil {
		return err
	}
	if len(v.Resources) > 0 && string(v.Resources) != "{}" {
		c.Resources = &runtimeapi.ContainerResources{}
		return protojson.Unmarshal(v.Resources, c.Resources)
	}
	return nil
}
