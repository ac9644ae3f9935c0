package podnet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
)

// RouteProtocol tags berth's routes in the kernel's table (rtnetlink's
// protocol field; 199 is unassigned in /etc/iproute2/rt_protos), so the
// agent tells its own routes from everyone else's.
const RouteProtocol = 199

// IPRoute manages routes with iproute2's `ip`. It execs rather than
// linking a netlink library: berth's module graph has none
// (github.com/vishvananda/netlink is not in go.sum), iproute2 is on every
// Linux node, and `ip route replace` is the atomic add-or-update needed.
// It acts in the network namespace of the calling thread.
type IPRoute struct {
	Path string // `ip` binary; "ip" from PATH when empty
}

// List returns berth's IPv4 and IPv6 routes in the main table.
func (r IPRoute) List(ctx context.Context) ([]Route, error) {
	var out []Route
	for _, family := range []string{"-4", "-6"} {
		data, err := r.run(ctx, family, "-json", "route", "show", "proto", strconv.Itoa(RouteProtocol))
		if err != nil {
			return nil, err
		}
		var entries []struct {
			Dst     string `json:"dst"`
			Gateway string `json:"gateway"`
		}
		if err := json.Unmarshal(bytes.TrimSpace(data), &entries); err != nil && len(bytes.TrimSpace(data)) > 0 {
			return nil, fmt.Errorf("parse `ip route` output: %w", err)
		}
		for _, e := range entries {
			dst, err1 := netip.ParsePrefix(e.Dst)
			via, err2 := netip.ParseAddr(e.Gateway)
			if err1 != nil || err2 != nil {
				continue // a route of ours not of the host-gw shape; left alone
			}
			out = append(out, Route{Dst: dst, Via: via})
		}
	}
	return out, nil
}

// Replace adds the route or updates the one to the same destination.
func (r IPRoute) Replace(ctx context.Context, rt Route) error {
	_, err := r.run(ctx, "route", "replace", rt.Dst.String(), "via", rt.Via.String(), "proto", strconv.Itoa(RouteProtocol))
	return err
}

// Delete removes the route; one already gone is not an error.
func (r IPRoute) Delete(ctx context.Context, rt Route) error {
	_, err := r.run(ctx, "route", "del", rt.Dst.String(), "via", rt.Via.String(), "proto", strconv.Itoa(RouteProtocol))
	if err != nil && strings.Contains(err.Error(), "No such process") {
		return nil
	}
	return err
}

func (r IPRoute) run(ctx context.Context, args ...string) ([]byte, error) {
	path := r.Path
	if path == "" {
		path = "ip"
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}
