// Package kubectli18n has the embedded kubectl load its message catalog
// only in `berth kubectl` processes.
//
// kubectl's command packages translate their help texts while Go
// initializes them, so in a multicall binary every process (server, agent,
// runtime) loaded the whole catalog at start: ~25 ms and ~4 MiB of
// allocations for text only kubectl ever shows. kubectl offers
// i18n.SetLoadTranslationsFunc for exactly this; it has to be called before
// any package calls i18n.T, which Go's initialization order (since Go 1.21:
// packages sorted by import path, each as soon as its imports are done)
// guarantees here: this package imports nothing else that translates, and
// its path sorts before every k8s.io package that calls i18n.T.
package kubectli18n

import (
	"os"
	"slices"

	"k8s.io/kubectl/pkg/util/i18n"
)

func init() {
	// An error means a package translated before this init ran: the catalog
	// is loaded already and there is nothing left to save.
	_ = i18n.SetLoadTranslationsFunc(func() error { return load(os.Args) })
}

// load loads kubectl's catalog for the user's language when the process
// runs kubectl. Elsewhere it loads nothing, and i18n.T returns its
// argument, the English default. An argument "kubectl" anywhere counts:
// loading it once too often only costs what this package saves.
func load(args []string) error {
	if !slices.Contains(args, "kubectl") {
		return nil
	}
	return i18n.LoadTranslations("kubectl", nil)
}
