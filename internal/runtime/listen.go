package runtime

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// socketPath turns --listen unix:///PATH into PATH.
func socketPath(listen string) (string, error) {
	path, ok := strings.CutPrefix(listen, "unix://")
	if !ok || !filepath.IsAbs(path) {
		return "", fmt.Errorf("--listen %q: want unix:///absolute/path", listen)
	}
	return path, nil
}

// listenUnix listens on path with mode 0660 and group group (root's if
// empty). A live runtime already answering there is an error; a stale socket
// left by a dead one is replaced; anything else at path is left alone.
func listenUnix(path, group string) (net.Listener, error) {
	gid := 0
	if group != "" {
		g, err := user.LookupGroup(group)
		if err != nil {
			return nil, fmt.Errorf("--socket-group %q: %w", group, err)
		}
		if gid, err = strconv.Atoi(g.Gid); err != nil {
			return nil, fmt.Errorf("--socket-group %q: gid %q: %w", group, g.Gid, err)
		}
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if conn, err := net.DialTimeout("unix", path, time.Second); err == nil {
			conn.Close()
			return nil, fmt.Errorf("%s is in use by a running service", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("inspect %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create socket dir: %w", err)
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chown(path, 0, gid); err != nil {
		lis.Close()
		return nil, fmt.Errorf("chown socket: %w", err)
	}
	if err := os.Chmod(path, 0o660); err != nil {
		lis.Close()
		return nil, fmt.Errorf("chmod socket: %w", err)
	}
	return lis, nil
}
