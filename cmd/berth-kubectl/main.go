// Command berth-kubectl is the upstream kubectl that `berth kubectl` execs
// (internal/cli/companionexec), built without the API server, controllers, etcd and the
// agent, so that a short kubectl command neither maps nor initialises them.
// It takes berth's own arguments: `berth-kubectl kubectl ARGS`.
package main

import (
	"os"

	"github.com/berth/berth/internal/cli/kubectlcli"
)

func main() {
	os.Exit(kubectlcli.Execute(os.Args[1:]))
}
