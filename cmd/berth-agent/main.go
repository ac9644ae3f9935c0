// Command berth-agent is the node agent that `berth agent` execs
// (internal/cli/companionexec): the same command, built without berth's API
// server, controllers and etcd and without kubectl, whose packages a
// long-running daemon on every node would otherwise map and initialise. It
// takes berth's own arguments: `berth-agent agent FLAGS`.
package main

import (
	"os"

	"github.com/berth/berth/internal/cli/agentcli"
)

func main() {
	os.Exit(agentcli.Execute(os.Args[1:]))
}
