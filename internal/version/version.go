// Package version reports what this build of berth is and which upstream
// interfaces it speaks. Everything is read from the Go build information, so a
// plain `go build` in a git checkout carries the commit without ldflags.
package version

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// Version is berth's release version; release builds may override it with
// -ldflags "-X github.com/berth/berth/internal/version.Version=vX.Y.Z".
var Version = "v0.1.0-dev"

// CRIVersion is the Container Runtime Interface API version berth serves and consumes.
const CRIVersion = "v1"

// Info describes one build.
type Info struct {
	Version       string // berth version
	GitCommit     string // vcs.revision, with "-dirty" when the tree was modified
	GoVersion     string
	KubernetesAPI string // Kubernetes release whose API types berth speaks (from k8s.io/api)
	CRIAPI        string // CRI version and the k8s.io/cri-api module version
}

// Get returns the build's Info.
func Get() Info {
	info := Info{Version: Version, GitCommit: "unknown", KubernetesAPI: "unknown", CRIAPI: CRIVersion}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	info.GoVersion = bi.GoVersion
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.GitCommit = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && info.GitCommit != "unknown" {
		info.GitCommit += "-dirty"
	}
	for _, dep := range bi.Deps {
		switch dep.Path {
		case "k8s.io/api":
			info.KubernetesAPI = KubernetesRelease(dep.Version)
		case "k8s.io/cri-api":
			info.CRIAPI = fmt.Sprintf("%s (k8s.io/cri-api %s)", CRIVersion, dep.Version)
		}
	}
	return info
}

// KubernetesRelease maps a staging module version (v0.37.2) to the Kubernetes
// release it was cut from (v1.37.2).
func KubernetesRelease(stagingVersion string) string {
	if rest, ok := strings.CutPrefix(stagingVersion, "v0."); ok {
		return "v1." + rest
	}
	return stagingVersion
}

// String renders Info as `berth version` prints it.
func (i Info) String() string {
	return fmt.Sprintf("berth %s\n  git commit:     %s\n  go:             %s\n  kubernetes api: %s\n  cri api:        %s\n",
		i.Version, i.GitCommit, i.GoVersion, i.KubernetesAPI, i.CRIAPI)
}
