package image

import (
	"context"
	"io/fs"
	"path/filepath"
	"syscall"

	"golang.org/x/sync/errgroup"

	"github.com/berth/berth/internal/atomicfile"
)

// syncJobs bounds the fsyncs in flight while a layer is made durable;
// concurrent fsyncs share the filesystem's journal commits.
const syncJobs = 8

// syncTree makes every regular file and directory below root (root
// included) durable: the files' data and attributes, and every directory's
// entries, which is what a symlink, device node, FIFO or hard link is.
//
// It syncs only the layer's own files. syncfs(2), which it replaces, flushes
// everything dirty on the filesystem: with 300 MB written by another process
// just before, a pull of a 2.4 MB image took 250–270 ms instead of 9 ms.
func syncTree(ctx context.Context, root string) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(syncJobs)
	linked := map[uint64]bool{} // inodes of hard-linked files already synced
	walkErr := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := gctx.Err(); err != nil {
			return err
		}
		// Only regular files and directories are opened: opening a FIFO
		// would block, and a symlink must never be followed.
		if !d.IsDir() && !d.Type().IsRegular() {
			return nil
		}
		if d.Type().IsRegular() {
			// A layer may link one file hundreds of times (busybox's
			// applets): its inode is synced once.
			seen, err := alreadySynced(d, linked)
			if err != nil || seen {
				return err
			}
		}
		g.Go(func() error { return atomicfile.SyncPath(path) })
		return nil
	})
	if err := g.Wait(); err != nil {
		return err
	}
	return walkErr
}

// alreadySynced reports whether the regular file d is a hard link to an
// inode in linked, adding it if not.
func alreadySynced(d fs.DirEntry, linked map[uint64]bool) (bool, error) {
	info, err := d.Info()
	if err != nil {
		return false, err
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || st.Nlink < 2 {
		return false, nil
	}
	if linked[st.Ino] {
		return true, nil
	}
	linked[st.Ino] = true
	return false, nil
}
