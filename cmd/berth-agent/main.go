// Command berth-agent is the node agent that `berth agent` execs
// (internal/cli): the same command, built without the multicall binary's
// API server, controllers, etcd and kubectl, whose packages a long-running
// daemon on every node would otherwise keep mapped and initialise. It takes
// berth's own arguments: `berth-agent agent FLAGS`.
package main

import (
	"os"

	"github.com/berth/berth/internal/cli/agentcli"
)

func main() {
	os.Exit(agentcli.Execute(os.Args[1:]))
}
