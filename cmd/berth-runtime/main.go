// Command berth-runtime is the CRI v1 runtime service that `berth runtime`
// execs (internal/cli): the same command, built without the multicall
// binary's API server, etcd and kubectl, whose package initialisation alone
// allocates ~8.6 MB and whose code pages a long-running daemon would keep
// mapped. It takes berth's own arguments: `berth-runtime runtime FLAGS`.
package main

import (
	"os"

	"github.com/berth/berth/internal/cli/runtimecli"
)

func main() {
	os.Exit(runtimecli.Execute(os.Args[1:]))
}
