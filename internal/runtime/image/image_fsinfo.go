package image

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ImageFsInfo implements the CRI: the bytes and inodes the image store uses,
// and the mount point of the filesystem it lives on (which the kubelet uses
// to find that filesystem's capacity).
func (s *Service) ImageFsInfo(ctx context.Context, _ *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	usedBytes, inodes, err := s.storeUsage()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "image store usage: %v", err)
	}
	mountpoint, err := mountPointOf(s.cfg.Root)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "image store filesystem: %v", err)
	}
	usage := &runtimeapi.FilesystemUsage{
		Timestamp:  time.Now().UnixNano(),
		FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: mountpoint},
		UsedBytes:  &runtimeapi.UInt64Value{Value: usedBytes},
		InodesUsed: &runtimeapi.UInt64Value{Value: inodes},
	}
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{usage}}, nil
}

// storeUsage is the disk usage of the whole store. Layer snapshots never
// change once unpacked, so each is measured once and remembered; only the
// rest (blobs, index, containers' writable layers) is walked on every call.
func (s *Service) storeUsage() (bytes, inodes uint64, err error) {
	bytes, inodes, err = diskUsage(s.cfg.Root, s.layers.dir)
	if err != nil {
		return 0, 0, err
	}
	snapBytes, snapInodes, err := s.layers.usage()
	return bytes + snapBytes, inodes + snapInodes, err
}

// diskUsage walks dir and sums the disk blocks and inodes it holds, counting
// each hard-linked inode once and skipping the skip directories and other
// mounts (a mounted container rootfs is not the store's usage).
func diskUsage(dir string, skip ...string) (bytes, inodes uint64, err error) {
	rootDev, err := deviceOf(dir)
	if err != nil {
		return 0, 0, err
	}
	seen := map[uint64]bool{}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil // removed while walking
			}
			return err
		}
		if slices.Contains(skip, path) {
			return fs.SkipDir
		}
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil {
			if errors.Is(err, unix.ENOENT) {
				return nil
			}
			return err
		}
		if st.Dev != rootDev {
			return fs.SkipDir
		}
		if seen[st.Ino] {
			return nil
		}
		seen[st.Ino] = true
		bytes += uint64(st.Blocks) * 512
		inodes++
		return nil
	})
	return bytes, inodes, err
}

func deviceOf(path string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, fmt.Errorf("stat %s: %w", path, err)
	}
	return st.Dev, nil
}

// mountPointOf returns the highest ancestor of path on the same device, i.e.
// the mount point of the filesystem holding path.
func mountPointOf(path string) (string, error) {
	dev, err := deviceOf(path)
	if err != nil {
		return "", err
	}
	cur := path
	for cur != "/" {
		parent := filepath.Dir(cur)
		pdev, err := deviceOf(parent)
		if err != nil {
			return "", err
		}
		if pdev != dev {
			break
		}
		cur = parent
	}
	return cur, nil
}
