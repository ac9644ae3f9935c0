package server

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/berth/berth/internal/runtime/spec"
)

func invalid(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}

func validateSandboxConfig(cfg *PodSandboxConfig) error {
	if cfg == nil {
		return invalid("sandbox config is required")
	}
	md := cfg.GetMetadata()
	switch {
	case md == nil:
		return invalid("sandbox config metadata is required")
	case md.GetName() == "":
		return invalid("sandbox metadata.name is required")
	case md.GetNamespace() == "":
		return invalid("sandbox metadata.namespace is required")
	case md.GetUid() == "":
		return invalid("sandbox metadata.uid is required")
	}
	// No options at all means the host's user namespace (POD is the enum's
	// zero value, so only an explicit UserNamespace asks for one).
	if err := spec.ValidateUserNamespace(cfg); err != nil {
		return err
	}
	for _, pm := range cfg.GetPortMappings() {
		if pm.GetHostPort() < 0 || pm.GetHostPort() > 65535 || pm.GetContainerPort() <= 0 || pm.GetContainerPort() > 65535 {
			return invalid("port mapping %d->%d out of range", pm.GetHostPort(), pm.GetContainerPort())
		}
	}
	return nil
}

func validateContainerConfig(cfg *ContainerConfig) error {
	if cfg == nil {
		return invalid("container config is required")
	}
	switch {
	case cfg.GetMetadata() == nil:
		return invalid("container config metadata is required")
	case cfg.GetMetadata().GetName() == "":
		return invalid("container metadata.name is required")
	case cfg.GetImage().GetImage() == "":
		return invalid("container image is required")
	}
	return nil
}

func requireID(kind, id string) error {
	if id == "" {
		return invalid("%s ID is required", kind)
	}
	return nil
}

// matchLabels reports whether labels contain every selector pair.
func matchLabels(selector, labels map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}
