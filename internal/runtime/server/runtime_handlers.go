package server

import (
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// defaultHandlerAlias names the default handler as containerd's default
// configuration does, for clients that ask for it by name.
const defaultHandlerAlias = "runc"

// checkRuntimeHandler refuses a sandbox naming a handler the runtime was not
// started with; "" is the default handler.
func (s *Server) checkRuntimeHandler(handler string) error {
	if handler == "" || handler == defaultHandlerAlias || slices.Contains(s.cfg.RuntimeHandlers, handler) {
		return nil
	}
	known := append([]string{`""`, defaultHandlerAlias}, s.cfg.RuntimeHandlers...)
	return status.Errorf(codes.InvalidArgument, "unknown runtime handler %q (configured: %s)", handler, strings.Join(known, ", "))
}

// runtimeHandlers are the handlers Status reports: the default one ("")
// and every extra one, all with the same features since all run with the
// same OCI runtime.
func (s *Server) runtimeHandlers() []*runtimeapi.RuntimeHandler {
	names := append([]string{""}, s.cfg.RuntimeHandlers...)
	out := make([]*runtimeapi.RuntimeHandler, 0, len(names))
	for _, name := range names {
		out = append(out, &runtimeapi.RuntimeHandler{Name: name, Features: &runtimeapi.RuntimeHandlerFeatures{
			RecursiveReadOnlyMounts: s.cfg.Features.RecursiveReadOnlyMounts,
			UserNamespaces:          s.cfg.Features.UserNamespaces,
		}})
	}
	return out
}
