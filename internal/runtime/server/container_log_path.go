package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// prepareLogFile checks a container's log path, relative to its sandbox's
// log directory as CRI defines it, and creates the file there. The monitor
// appends to that file as root, so a path that leaves the directory
// ("../../etc/cron.d/x") or passes through a symlink planted by someone who
// can write below the log directory (a log collector's hostPath, say)
// would let container output land in any host file: both are refused with
// InvalidArgument. Directories are made and the file created by walking
// from the log directory with openat and O_NOFOLLOW, so no symlink is
// followed on the way; the monitor, which reopens the file by name after
// a rotation, refuses a symlink in its place too.
func prepareLogFile(logDir, logPath string) error {
	if err := checkLogPath(logPath); err != nil {
		return err
	}
	parts := strings.Split(filepath.Clean(logPath), string(filepath.Separator))
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return status.Errorf(codes.Internal, "create log directory: %v", err)
	}
	dir, err := unix.Open(logDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return status.Errorf(codes.Internal, "open log directory: %v", err)
	}
	defer func() { unix.Close(dir) }()
	for _, name := range parts[:len(parts)-1] {
		next, err := openDirNoFollow(dir, name)
		if err != nil {
			return refuseLogPath(logPath, err)
		}
		unix.Close(dir)
		dir = next
	}
	f, err := unix.Openat(dir, parts[len(parts)-1], unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o640)
	if err != nil {
		return refuseLogPath(logPath, err)
	}
	defer unix.Close(f)
	var st unix.Stat_t
	if err := unix.Fstat(f, &st); err != nil {
		return status.Errorf(codes.Internal, "log file: %v", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return status.Errorf(codes.InvalidArgument, "log_path %q is not a regular file", logPath)
	}
	return nil
}

// checkLogPath refuses, before anything is made, a log path that is not
// relative or that leaves the log directory as text.
func checkLogPath(logPath string) error {
	if !filepath.IsLocal(logPath) {
		return status.Errorf(codes.InvalidArgument, "log_path %q must be a relative path inside the sandbox's log directory", logPath)
	}
	return nil
}

// openDirNoFollow opens (making it first if missing) the directory name
// in dir, refusing a symlink in its place.
func openDirNoFollow(dir int, name string) (int, error) {
	if err := unix.Mkdirat(dir, name, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, err
	}
	return unix.Openat(dir, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// refuseLogPath reports a symlink or non-directory on the way as the
// caller's bad path, anything else as the runtime's failure.
func refuseLogPath(logPath string, err error) error {
	// ELOOP: a symlink; ENOTDIR: a symlink or file where a directory
	// belongs; ENXIO: a FIFO with no reader.
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ENXIO) {
		return status.Errorf(codes.InvalidArgument, "log_path %q goes through a symlink or is not a regular file: %v", logPath, err)
	}
	return status.Errorf(codes.Internal, "%s", fmt.Errorf("create log file %q: %w", logPath, err))
}
