// Command berth is the single multicall binary of berth: API server, node
// agent, CRI runtime and kubectl are subcommands run as separate processes.
package main

import (
	"os"

	"github.com/berth/berth/internal/cli"
	// Before kubectl's packages initialize: see the package comment.
	_ "github.com/berth/berth/internal/cli/kubectli18n"
)

func main() {
	os.Exit(cli.Execute(os.Args[1:]))
}
