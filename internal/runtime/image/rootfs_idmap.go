package image

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/berth/berth/internal/runtime/idmap"
)

// idmapLayers attaches, under dir/0, dir/1, ..., a read-only clone of each
// layer directory idmapped through the user namespace at userns, and
// returns their paths for overlayfs to stack. On error none stays attached.
func idmapLayers(layers []string, dir, userns string) ([]string, error) {
	ns, err := os.Open(userns)
	if err != nil {
		return nil, fmt.Errorf("idmapped layers: user namespace: %w", err)
	}
	defer ns.Close()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("idmapped layers: %w", err)
	}
	var attached []string
	for i, layer := range layers {
		target := filepath.Join(dir, strconv.Itoa(i))
		if err := idmap.Attach(layer, target, int(ns.Fd()), idmap.Options{ReadOnly: true}); err != nil {
			idmap.Detach(attached...)
			return nil, fmt.Errorf("idmapped layer: %w", err)
		}
		attached = append(attached, target)
	}
	return attached, nil
}
