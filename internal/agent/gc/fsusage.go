package gc

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// FsStats is the size of the filesystem that holds the runtime's images.
type FsStats struct {
	CapacityBytes  uint64
	AvailableBytes uint64 // to unprivileged users, as df shows
}

// FsUsage reads the image filesystem's size. Behind an interface so tests
// can set usage without filling a disk.
type FsUsage interface {
	ImageFs(ctx context.Context) (FsStats, error)
}

// criFsUsage asks the runtime where its images live (CRI ImageFsInfo's
// mount point: CRI reports bytes used but not the filesystem's size, as
// the kubelet also finds) and statfs(2)s that filesystem.
type criFsUsage struct {
	images runtimeapi.ImageServiceClient
}

// NewCRIFsUsage reads the image filesystem named by the runtime's
// ImageFsInfo.
func NewCRIFsUsage(images runtimeapi.ImageServiceClient) FsUsage {
	return criFsUsage{images: images}
}

func (u criFsUsage) ImageFs(ctx context.Context) (FsStats, error) {
	resp, err := u.images.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil {
		return FsStats{}, fmt.Errorf("CRI ImageFsInfo: %w", err)
	}
	fss := resp.GetImageFilesystems()
	if len(fss) == 0 || fss[0].GetFsId().GetMountpoint() == "" {
		return FsStats{}, errors.New("CRI ImageFsInfo names no image filesystem")
	}
	mountpoint := fss[0].GetFsId().GetMountpoint()
	var st unix.Statfs_t
	if err := unix.Statfs(mountpoint, &st); err != nil {
		return FsStats{}, fmt.Errorf("statfs %s: %w", mountpoint, err)
	}
	return FsStats{CapacityBytes: st.Blocks * uint64(st.Bsize), AvailableBytes: st.Bavail * uint64(st.Bsize)}, nil
}
