package image

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// OCI layer whiteout names (image-spec layer.md) and their overlayfs forms.
const (
	whiteoutPrefix     = ".wh."
	whiteoutMetaPrefix = ".wh..wh."
	whiteoutOpaque     = ".wh..wh..opq"
	overlayOpaqueXattr = "trusted.overlay.opaque"
	paxXattrPrefix     = "SCHILY.xattr."
)

// unpackLayer extracts the uncompressed layer tar r into the empty directory
// dir so that dir can serve as one overlayfs lowerdir: an OCI whiteout
// ".wh.NAME" becomes the character device 0/0 that overlayfs treats as a
// whiteout, and ".wh..wh..opq" becomes the trusted.overlay.opaque=y xattr on
// its directory. Because each layer keeps its own directory and overlayfs
// stacks them, the whiteouts hide exactly the lower layers' entries.
//
// Written by hand because no well-kept Go library extracts into overlay
// format without pulling in containerd or moby as a whole; it never follows a
// symlink while writing: an entry whose path or link target leaves dir, or
// whose parent inside dir is a symlink, is refused.
func unpackLayer(dir string, r io.Reader) error {
	u := &unpacker{root: dir}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read layer tar: %w", err)
		}
		if err := u.entry(hdr, tr); err != nil {
			return fmt.Errorf("layer entry %q: %w", hdr.Name, err)
		}
	}
	return u.finishDirs()
}

type unpacker struct {
	root string
	// dirTimes are applied last: creating entries inside a directory
	// changes its mtime.
	dirTimes []dirTime
}

type dirTime struct {
	path  string
	mtime time.Time
}

// cleanRel returns name as a clean path relative to the layer root, or an
// error if it would leave the root.
func cleanRel(name string) (string, error) {
	if path.IsAbs(name) {
		name = strings.TrimLeft(name, "/")
	}
	rel := path.Clean(name)
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("path %q escapes the layer", name)
	}
	return rel, nil
}

func (u *unpacker) entry(hdr *tar.Header, body io.Reader) error {
	rel, err := cleanRel(hdr.Name)
	if err != nil {
		return err
	}
	if rel == "." {
		return nil // the layer root itself; its attributes belong to the rootfs
	}
	parentRel, base := path.Split(rel)
	parent, err := u.ensureDir(parentRel)
	if err != nil {
		return err
	}
	switch {
	case base == whiteoutOpaque:
		return unix.Lsetxattr(parent, overlayOpaqueXattr, []byte("y"), 0)
	case strings.HasPrefix(base, whiteoutMetaPrefix):
		return nil // aufs bookkeeping (.wh..wh.plnk etc.), meaningless here
	case strings.HasPrefix(base, whiteoutPrefix):
		return u.whiteout(filepath.Join(parent, strings.TrimPrefix(base, whiteoutPrefix)))
	}
	target := filepath.Join(parent, base)
	replacedWhiteout, err := u.clearTarget(target, hdr.Typeflag == tar.TypeDir)
	if err != nil {
		return err
	}
	if err := u.create(target, hdr, body); err != nil {
		return err
	}
	if hdr.Typeflag == tar.TypeLink {
		return nil // a hard link shares its source's inode and attributes
	}
	if replacedWhiteout && hdr.Typeflag == tar.TypeDir {
		// The layer deleted the lower directory and made a new one: the
		// new one must not show the old contents.
		if err := unix.Lsetxattr(target, overlayOpaqueXattr, []byte("y"), 0); err != nil {
			return fmt.Errorf("mark opaque: %w", err)
		}
	}
	return u.applyAttrs(target, hdr)
}

// ensureDir returns the absolute path of the directory rel inside the root,
// creating missing components (mode 0755, as tar writers may omit parents)
// and refusing any component that is a symlink or not a directory.
func (u *unpacker) ensureDir(rel string) (string, error) {
	cur := u.root
	for _, part := range strings.Split(strings.Trim(rel, "/"), "/") {
		if part == "" {
			continue
		}
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		switch {
		case errors.Is(err, os.ErrNotExist):
			if err := os.Mkdir(cur, 0o755); err != nil {
				return "", err
			}
		case err != nil:
			return "", err
		case fi.Mode()&os.ModeSymlink != 0:
			return "", fmt.Errorf("parent %q is a symlink", strings.TrimPrefix(cur, u.root))
		case !fi.IsDir():
			return "", fmt.Errorf("parent %q is not a directory", strings.TrimPrefix(cur, u.root))
		}
	}
	return cur, nil
}

// whiteout records that target is deleted from the lower layers.
func (u *unpacker) whiteout(target string) error {
	fi, err := os.Lstat(target)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return unix.Mknod(target, unix.S_IFCHR, int(unix.Mkdev(0, 0)))
	case err != nil:
		return err
	case fi.IsDir():
		// This layer also made a directory of that name: it replaces the
		// lower one rather than merging with it.
		return unix.Lsetxattr(target, overlayOpaqueXattr, []byte("y"), 0)
	default:
		return nil // this layer's own file already hides the lower one
	}
}

// clearTarget removes what an earlier entry of this layer put at target,
// keeping an existing directory when the new entry is also a directory. It
// reports whether the removed entry was a whiteout.
func (u *unpacker) clearTarget(target string, newIsDir bool) (wasWhiteout bool, err error) {
	fi, err := os.Lstat(target)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if fi.IsDir() && newIsDir {
		return false, nil
	}
	wasWhiteout = isWhiteoutDevice(fi)
	return wasWhiteout, os.RemoveAll(target)
}

func isWhiteoutDevice(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Mode&syscall.S_IFMT == syscall.S_IFCHR && st.Rdev == 0
}

func (u *unpacker) create(target string, hdr *tar.Header, body io.Reader) error {
	switch hdr.Typeflag {
	case tar.TypeDir:
		if _, err := os.Lstat(target); err == nil {
			return nil
		}
		return os.Mkdir(target, 0o700)
	case tar.TypeReg:
		return writeRegular(target, body)
	case tar.TypeSymlink:
		// The link's text may point anywhere: it is resolved inside the
		// container's root, and this unpacker never follows it.
		return os.Symlink(hdr.Linkname, target)
	case tar.TypeLink:
		return u.hardlink(target, hdr.Linkname)
	case tar.TypeChar:
		return unix.Mknod(target, unix.S_IFCHR|uint32(hdr.Mode&0o7777), int(unix.Mkdev(uint32(hdr.Devmajor), uint32(hdr.Devminor))))
	case tar.TypeBlock:
		return unix.Mknod(target, unix.S_IFBLK|uint32(hdr.Mode&0o7777), int(unix.Mkdev(uint32(hdr.Devmajor), uint32(hdr.Devminor))))
	case tar.TypeFifo:
		return unix.Mkfifo(target, uint32(hdr.Mode&0o7777))
	default:
		return fmt.Errorf("unsupported tar entry type %q", hdr.Typeflag)
	}
}

func writeRegular(target string, body io.Reader) error {
	f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// hardlink links target to an earlier entry of the same layer.
func (u *unpacker) hardlink(target, linkname string) error {
	rel, err := cleanRel(linkname)
	if err != nil {
		return fmt.Errorf("hard link target: %w", err)
	}
	if rel == "." {
		return fmt.Errorf("hard link to the layer root")
	}
	parentRel, base := path.Split(rel)
	parent, err := u.ensureDir(parentRel)
	if err != nil {
		return fmt.Errorf("hard link target: %w", err)
	}
	src := filepath.Join(parent, base)
	fi, err := os.Lstat(src)
	if err != nil {
		return fmt.Errorf("hard link target: %w", err)
	}
	if fi.IsDir() {
		return fmt.Errorf("hard link to directory %q", linkname)
	}
	// link(2) does not follow a symlink source: it links the symlink itself.
	return os.Link(src, target)
}

// applyAttrs sets ownership, xattrs, mode and times; in this order because
// chown clears the setuid/setgid bits.
func (u *unpacker) applyAttrs(target string, hdr *tar.Header) error {
	if err := os.Lchown(target, hdr.Uid, hdr.Gid); err != nil {
		return fmt.Errorf("chown: %w", err)
	}
	for key, value := range hdr.PAXRecords {
		if name, ok := strings.CutPrefix(key, paxXattrPrefix); ok {
			if err := unix.Lsetxattr(target, name, []byte(value), 0); err != nil {
				return fmt.Errorf("set xattr %s: %w", name, err)
			}
		}
	}
	if hdr.Typeflag != tar.TypeSymlink {
		if err := unix.Chmod(target, uint32(hdr.Mode&0o7777)); err != nil {
			return fmt.Errorf("chmod: %w", err)
		}
	}
	if hdr.Typeflag == tar.TypeDir {
		u.dirTimes = append(u.dirTimes, dirTime{path: target, mtime: hdr.ModTime})
		return nil
	}
	return setTimes(target, hdr.ModTime)
}

func (u *unpacker) finishDirs() error {
	for i := len(u.dirTimes) - 1; i >= 0; i-- {
		if err := setTimes(u.dirTimes[i].path, u.dirTimes[i].mtime); err != nil {
			return err
		}
	}
	return nil
}

func setTimes(target string, mtime time.Time) error {
	ts := unix.NsecToTimespec(mtime.UnixNano())
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, target, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("set times: %w", err)
	}
	return nil
}
