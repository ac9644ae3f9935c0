package images

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"path"
	"sort"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Entry is one member of a layer tar. Constructors below fill the header;
// every entry gets the fixed Epoch modification time and root ownership
// unless set, so a layer's bytes depend only on its contents.
type Entry struct {
	Header tar.Header
	Data   []byte
}

// Dir is a directory entry.
func Dir(name string, mode int64) Entry {
	return Entry{Header: tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode}}
}

// File is a regular file entry.
func File(name string, mode int64, data []byte) Entry {
	return Entry{Header: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data))}, Data: data}
}

// HardLink makes name a hard link to target (both image paths). Its mode is
// set explicitly to 0755 because some extractors apply a link entry's mode
// to the shared inode, and busybox applets must stay executable.
func HardLink(name, target string) Entry {
	return Entry{Header: tar.Header{Typeflag: tar.TypeLink, Name: name, Linkname: target, Mode: 0o755}}
}

// Symlink makes name a symbolic link to target.
func Symlink(name, target string) Entry {
	return Entry{Header: tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777}}
}

// Whiteout deletes name from the layers below (the OCI ".wh." convention).
func Whiteout(name string) Entry {
	return File(path.Join(path.Dir(name), ".wh."+path.Base(name)), 0o644, nil)
}

// Opaque hides everything the layers below put in dir (".wh..wh..opq").
func Opaque(dir string) Entry {
	return File(path.Join(dir, ".wh..wh..opq"), 0o644, nil)
}

// Owned returns e owned by uid:gid.
func (e Entry) Owned(uid, gid int) Entry {
	e.Header.Uid, e.Header.Gid = uid, gid
	return e
}

// layerTar writes entries as an uncompressed tar, in the given order (a
// directory must come before what it holds; whiteouts before their siblings
// is not required). Names are stored relative, without a leading slash.
func layerTar(entries []Entry) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := e.Header
		hdr.Name = relative(hdr.Name)
		if hdr.Typeflag == tar.TypeLink {
			hdr.Linkname = relative(hdr.Linkname)
		}
		hdr.ModTime = Epoch
		hdr.Format = tar.FormatPAX
		if err := tw.WriteHeader(&hdr); err != nil {
			return nil, fmt.Errorf("tar header %s: %w", hdr.Name, err)
		}
		if _, err := tw.Write(e.Data); err != nil {
			return nil, fmt.Errorf("tar data %s: %w", hdr.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("close tar: %w", err)
	}
	return buf.Bytes(), nil
}

func relative(name string) string {
	for len(name) > 0 && name[0] == '/' {
		name = name[1:]
	}
	return name
}

// newLayer builds a gzip-compressed layer of the given media type.
// go-containerregistry compresses with the standard library's gzip, whose
// output (no timestamp in the header) is a function of the input.
func newLayer(entries []Entry, mt types.MediaType) (v1.Layer, error) {
	data, err := layerTar(entries)
	if err != nil {
		return nil, err
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(mt), tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	return l, nil
}

// parentsFirst returns the directories that paths need, parents first,
// excluding those already in have.
func parentDirs(paths []string, have map[string]bool) []string {
	need := map[string]bool{}
	for _, p := range paths {
		for d := path.Dir(path.Clean("/" + p)); d != "/"; d = path.Dir(d) {
			if !have[d] {
				need[d] = true
			}
		}
	}
	dirs := make([]string, 0, len(need))
	for d := range need {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs) // a parent sorts before its children
	return dirs
}
