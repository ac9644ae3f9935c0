// Package atomicfile writes files so that a crash at any moment leaves either
// the old content or the new, never a torn file: write a temporary file
// beside the target, rename it over. WriteFile also syncs both, so that the
// new content survives a crash of the machine; Replace leaves that to the
// kernel, for records that a machine crash makes moot anyway.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// WriteFile atomically and durably replaces path with data, creating parent
// directories (0700): when it returns, the new content survives a crash of
// this process and of the machine.
func WriteFile(path string, data []byte, mode os.FileMode) error {
	return write(path, data, mode, true)
}

// Replace atomically replaces path with data, creating parent directories
// (0700), without waiting for the disk: the new content survives a crash of
// this process (it is in the page cache), but a crash of the machine may
// leave the old one. It saves the two journal commits of WriteFile's syncs
// (milliseconds each on a busy filesystem).
func Replace(path string, data []byte, mode os.FileMode) error {
	return write(path, data, mode, false)
}

func write(path string, data []byte, mode os.FileMode, durable bool) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create directory for %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if err := writeTemp(tmp, data, mode, durable); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("rename into %s: %w", path, err)
	}
	if !durable {
		return nil
	}
	return SyncPath(dir)
}

func writeTemp(f *os.File, data []byte, mode os.FileMode, durable bool) error {
	if err := f.Chmod(mode); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if !durable {
		return nil
	}
	return f.Sync()
}

// SyncPath fsyncs the regular file or directory at path (a directory's
// sync makes the entries made in it durable). It never follows a symlink,
// and opening a FIFO does not block: both are errors instead.
func SyncPath(path string) error {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("open %s to sync it: %w", path, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	return nil
}
