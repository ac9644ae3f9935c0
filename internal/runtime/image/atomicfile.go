package image

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/berth/berth/internal/atomicfile"
)

// commitTemp fsyncs and closes tmp, a temporary file streamed beside path,
// then renames it to path durably: atomicfile.WriteFile for content that
// does not fit in memory.
func commitTemp(tmp *os.File, path string, perm os.FileMode) error {
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return fmt.Errorf("chmod %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("fsync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("rename into %s: %w", path, err)
	}
	return atomicfile.SyncPath(filepath.Dir(path))
}
