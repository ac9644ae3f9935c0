// Command berth is berth's one command: `berth server`, `berth token`,
// `berth image`, `berth snapshot` and `berth version` run here, while
// `berth agent`, `berth runtime` and `berth kubectl` exec the companion
// executables beside it (berth-agent, berth-runtime, berth-kubectl), each
// built with only its own packages.
package main

import (
	"os"

	"github.com/berth/berth/internal/cli"
	// Before the server's packages initialize: see the package comment.
	_ "github.com/berth/berth/internal/cli/companionexec"
)

func main() {
	os.Exit(cli.Execute(os.Args[1:]))
}
