package image

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
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
// Every entry, whiteout and hard link source stays inside dir: each parent
// directory is opened with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS), so
// the kernel itself refuses a ".." that climbs out or a symlink on the way
// (one an earlier entry planted included), and the entry is then made
// relative to that open directory without following its last component.
// The layer may hold at most maxSize bytes, counted both as the
// uncompressed stream and as the files it expands to (a sparse entry
// declares more than it carries), so a decompression bomb stops early.
// The rest of r after the tar's end is read too, for the caller's hash.
//
// Written by hand because no well-kept Go library extracts into overlay
// format without pulling in containerd or moby as a whole.
func unpackLayer(dir string, r io.Reader, maxSize int64) error {
	rootFd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open layer dir: %w", err)
	}
	defer unix.Close(rootFd)
	stream := &sizeCap{r: r, left: maxSize, max: maxSize}
	u := &unpacker{root: rootFd, fileBudget: maxSize, maxSize: maxSize}
	tr := tar.NewReader(stream)
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
	if _, err := io.Copy(io.Discard, stream); err != nil {
		return fmt.Errorf("read layer tar: %w", err)
	}
	return u.finishDirs()
}

// errLayerTooLarge is the refusal of a layer over the size limit.
var errLayerTooLarge = errors.New("layer exceeds the maximum uncompressed size")

func tooLarge(max int64) error {
	return fmt.Errorf("%w of %d bytes (berth runtime --max-layer-size)", errLayerTooLarge, max)
}

// sizeCap reads at most max bytes of r and fails past them.
type sizeCap struct {
	r         io.Reader
	left, max int64
}

func (c *sizeCap) Read(p []byte) (int, error) {
	if c.left <= 0 {
		// One byte more tells a stream that ends exactly at the cap from
		// one that goes on.
		var one [1]byte
		if n, _ := io.ReadFull(c.r, one[:]); n == 0 {
			return 0, io.EOF
		}
		return 0, tooLarge(c.max)
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

type unpacker struct {
	root       int // the layer root, open
	fileBudget int64
	maxSize    int64
	// dirTimes are applied last: creating entries inside a directory
	// changes its mtime.
	dirTimes []dirTime
}

type dirTime struct {
	rel   string
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
	parent, err := u.openDir(parentRel, true)
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	switch {
	case base == whiteoutOpaque:
		return unix.Fsetxattr(parent, overlayOpaqueXattr, []byte("y"), 0)
	case strings.HasPrefix(base, whiteoutMetaPrefix):
		return nil // aufs bookkeeping (.wh..wh.plnk etc.), meaningless here
	case strings.HasPrefix(base, whiteoutPrefix):
		name := strings.TrimPrefix(base, whiteoutPrefix)
		if name == "" || name == "." || name == ".." {
			// ".wh..." would otherwise name the directory above.
			return fmt.Errorf("whiteout %q names no entry of its directory", base)
		}
		return u.whiteout(parent, name)
	}
	replacedWhiteout, err := u.clearTarget(parent, base, hdr.Typeflag == tar.TypeDir)
	if err != nil {
		return err
	}
	if err := u.create(parent, base, hdr, body); err != nil {
		return err
	}
	if hdr.Typeflag == tar.TypeLink {
		return nil // a hard link shares its source's inode and attributes
	}
	if replacedWhiteout && hdr.Typeflag == tar.TypeDir {
		// The layer deleted the lower directory and made a new one: the
		// new one must not show the old contents.
		if err := setOpaque(parent, base); err != nil {
			return fmt.Errorf("mark opaque: %w", err)
		}
	}
	return u.applyAttrs(parent, base, rel, hdr)
}

// beneath is how every directory of the layer is opened: never above the
// layer root, never through a symlink or onto another mount.
var beneath = unix.OpenHow{
	Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
	Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
}

// openDir opens the directory rel inside the root, creating missing
// components (mode 0755, as tar writers may omit parents) when create is set.
func (u *unpacker) openDir(rel string, create bool) (int, error) {
	cur, err := unix.Dup(u.root)
	if err != nil {
		return -1, err
	}
	for _, part := range strings.Split(strings.Trim(rel, "/"), "/") {
		if part == "" {
			continue
		}
		next, err := openChildDir(cur, part, create)
		unix.Close(cur)
		if err != nil {
			return -1, fmt.Errorf("parent %q: %w", rel, err)
		}
		cur = next
	}
	return cur, nil
}

// openChildDir opens (creating it if asked) the directory name in dirFd.
func openChildDir(dirFd int, name string, create bool) (int, error) {
	fd, err := unix.Openat2(dirFd, name, &beneath)
	if errors.Is(err, unix.ENOENT) && create {
		if err := unix.Mkdirat(dirFd, name, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, err
		}
		fd, err = unix.Openat2(dirFd, name, &beneath)
	}
	switch {
	case errors.Is(err, unix.ELOOP):
		return -1, fmt.Errorf("%q is a symlink", name)
	case errors.Is(err, unix.ENOTDIR):
		return -1, fmt.Errorf("%q is not a directory", name)
	case errors.Is(err, unix.EXDEV):
		return -1, fmt.Errorf("%q leaves the layer", name)
	}
	return fd, err
}

func setOpaque(parent int, name string) error {
	fd, err := openChildDir(parent, name, false)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fsetxattr(fd, overlayOpaqueXattr, []byte("y"), 0)
}

func lstatAt(dirFd int, name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstatat(dirFd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	return st, err
}

// whiteout records that name in parent is deleted from the lower layers.
func (u *unpacker) whiteout(parent int, name string) error {
	st, err := lstatAt(parent, name)
	switch {
	case errors.Is(err, unix.ENOENT):
		return unix.Mknodat(parent, name, unix.S_IFCHR, 0)
	case err != nil:
		return err
	case st.Mode&unix.S_IFMT == unix.S_IFDIR:
		// This layer also made a directory of that name: it replaces the
		// lower one rather than merging with it.
		return setOpaque(parent, name)
	default:
		return nil // this layer's own file already hides the lower one
	}
}

// clearTarget removes what an earlier entry of this layer put at name,
// keeping an existing directory when the new entry is also a directory. It
// reports whether the removed entry was a whiteout.
func (u *unpacker) clearTarget(parent int, name string, newIsDir bool) (wasWhiteout bool, err error) {
	st, err := lstatAt(parent, name)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	if isDir && newIsDir {
		return false, nil
	}
	wasWhiteout = st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0
	return wasWhiteout, removeAllAt(parent, name, isDir)
}

// removeAllAt removes name in parent and, for a directory, all below it,
// without following any symlink.
func removeAllAt(parent int, name string, isDir bool) error {
	if !isDir {
		return unix.Unlinkat(parent, name, 0)
	}
	fd, err := openChildDir(parent, name, false)
	if err != nil {
		return err
	}
	dir := os.NewFile(uintptr(fd), name)
	names, err := dir.Readdirnames(-1)
	if err == nil {
		for _, child := range names {
			st, serr := lstatAt(fd, child)
			if serr == nil {
				serr = removeAllAt(fd, child, st.Mode&unix.S_IFMT == unix.S_IFDIR)
			}
			if serr != nil {
				err = serr
				break
			}
		}
	}
	dir.Close()
	if err != nil {
		return err
	}
	return unix.Unlinkat(parent, name, unix.AT_REMOVEDIR)
}

func (u *unpacker) create(parent int, name string, hdr *tar.Header, body io.Reader) error {
	mode := uint32(hdr.Mode & 0o7777)
	switch hdr.Typeflag {
	case tar.TypeDir:
		if _, err := lstatAt(parent, name); err == nil {
			return nil
		}
		return unix.Mkdirat(parent, name, 0o700)
	case tar.TypeReg:
		if hdr.Size > u.fileBudget {
			return tooLarge(u.maxSize)
		}
		u.fileBudget -= hdr.Size
		return writeRegular(parent, name, body)
	case tar.TypeSymlink:
		// The link's text may point anywhere: it is resolved inside the
		// container's root, and this unpacker never follows it.
		return unix.Symlinkat(hdr.Linkname, parent, name)
	case tar.TypeLink:
		return u.hardlink(parent, name, hdr.Linkname)
	case tar.TypeChar:
		return unix.Mknodat(parent, name, unix.S_IFCHR|mode, int(unix.Mkdev(uint32(hdr.Devmajor), uint32(hdr.Devminor))))
	case tar.TypeBlock:
		return unix.Mknodat(parent, name, unix.S_IFBLK|mode, int(unix.Mkdev(uint32(hdr.Devmajor), uint32(hdr.Devminor))))
	case tar.TypeFifo:
		return unix.Mkfifoat(parent, name, mode)
	default:
		return fmt.Errorf("unsupported tar entry type %q", hdr.Typeflag)
	}
}

func writeRegular(parent int, name string, body io.Reader) error {
	fd, err := unix.Openat(parent, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := io.Copy(f, body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// hardlink links name in parent to an earlier entry of the same layer.
func (u *unpacker) hardlink(parent int, name, linkname string) error {
	rel, err := cleanRel(linkname)
	if err != nil {
		return fmt.Errorf("hard link target: %w", err)
	}
	if rel == "." {
		return fmt.Errorf("hard link to the layer root")
	}
	srcParentRel, srcBase := path.Split(rel)
	srcParent, err := u.openDir(srcParentRel, false)
	if err != nil {
		return fmt.Errorf("hard link target: %w", err)
	}
	defer unix.Close(srcParent)
	st, err := lstatAt(srcParent, srcBase)
	if err != nil {
		return fmt.Errorf("hard link target: %w", err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return fmt.Errorf("hard link to directory %q", linkname)
	}
	// Without AT_SYMLINK_FOLLOW, linkat links a symlink source itself.
	return unix.Linkat(srcParent, srcBase, parent, name, 0)
}

// procPath names name in the open directory parent for the calls that have
// no *at form (lsetxattr); the directory is the one already resolved
// beneath the root, and the l-call does not follow name itself.
func procPath(parent int, name string) string {
	return fmt.Sprintf("/proc/self/fd/%d/%s", parent, name)
}

// applyAttrs sets ownership, xattrs, mode and times; in this order because
// chown clears the setuid/setgid bits.
func (u *unpacker) applyAttrs(parent int, name, rel string, hdr *tar.Header) error {
	if err := unix.Fchownat(parent, name, hdr.Uid, hdr.Gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("chown: %w", err)
	}
	for key, value := range hdr.PAXRecords {
		if xattr, ok := strings.CutPrefix(key, paxXattrPrefix); ok {
			if err := unix.Lsetxattr(procPath(parent, name), xattr, []byte(value), 0); err != nil {
				return fmt.Errorf("set xattr %s: %w", xattr, err)
			}
		}
	}
	if hdr.Typeflag != tar.TypeSymlink {
		// Not a symlink (this entry just made it), so following is moot.
		if err := unix.Fchmodat(parent, name, uint32(hdr.Mode&0o7777), 0); err != nil {
			return fmt.Errorf("chmod: %w", err)
		}
	}
	if hdr.Typeflag == tar.TypeDir {
		u.dirTimes = append(u.dirTimes, dirTime{rel: rel, mtime: hdr.ModTime})
		return nil
	}
	return setTimes(parent, name, hdr.ModTime)
}

func (u *unpacker) finishDirs() error {
	for i := len(u.dirTimes) - 1; i >= 0; i-- {
		d := u.dirTimes[i]
		parentRel, base := path.Split(d.rel)
		parent, err := u.openDir(parentRel, false)
		if err != nil {
			return err
		}
		err = setTimes(parent, base, d.mtime)
		unix.Close(parent)
		if err != nil {
			return err
		}
	}
	return nil
}

func setTimes(parent int, name string, mtime time.Time) error {
	ts := unix.NsecToTimespec(mtime.UnixNano())
	if err := unix.UtimesNanoAt(parent, name, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("set times: %w", err)
	}
	return nil
}
