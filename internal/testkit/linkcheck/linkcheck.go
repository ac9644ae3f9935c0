// Package linkcheck tells which of a set of packages a Go main package
// links, from `go list -deps`: the executables that must stay small (the
// agent on every node, kubectl run per command) are checked for the server's
// packages without building them.
package linkcheck

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

const module = "github.com/berth/berth"

// ServerPackages are the package trees only `berth server` needs: the API
// server's registries and storage, the controllers, etcd's server side and
// berth's own API server, store and watch cache.
var ServerPackages = []string{
	"k8s.io/kubernetes/pkg/registry",
	"k8s.io/kubernetes/pkg/controller",
	"k8s.io/apiserver/pkg/registry",
	"go.etcd.io/etcd/server/v3",
	module + "/internal/apiserver",
	module + "/internal/server",
	module + "/internal/store",
	module + "/internal/watchcache",
	module + "/internal/controller",
}

// Kubectl is the package tree of the upstream kubectl and its CLI runtime.
var Kubectl = []string{"k8s.io/kubectl", "k8s.io/cli-runtime"}

// Agent is berth's node agent.
var Agent = []string{module + "/internal/agent"}

// Linked returns the packages main (an import path) links that are in one
// of the trees (a package path or anything below it), sorted.
func Linked(ctx context.Context, main string, trees []string) ([]string, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-deps", main)
	cmd.Dir = RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if exit, ok := err.(*exec.ExitError); ok {
			stderr = string(exit.Stderr)
		}
		return nil, fmt.Errorf("go list -deps %s: %w\n%s", main, err, stderr)
	}
	var linked []string
	for _, pkg := range strings.Fields(string(out)) {
		if inTrees(pkg, trees) {
			linked = append(linked, pkg)
		}
	}
	return linked, nil
}

func inTrees(pkg string, trees []string) bool {
	for _, tree := range trees {
		if pkg == tree || strings.HasPrefix(pkg, tree+"/") {
			return true
		}
	}
	return false
}

// RepoRoot is three levels above this file (internal/testkit/linkcheck).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}
