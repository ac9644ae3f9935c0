package cgroupstats

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Interface is one network interface's counters in a network namespace.
type Interface struct {
	Name                                    string
	RxBytes, RxPackets, RxErrors, RxDropped uint64
	TxBytes, TxPackets, TxErrors, TxDropped uint64
}

// ReadNetwork reads the interfaces of pid's network namespace from
// /proc/PID/net/dev, leaving out loopback as cAdvisor does.
func (r *Reader) ReadNetwork(pid int) ([]Interface, error) {
	f, err := os.Open(filepath.Join(r.Proc, strconv.Itoa(pid), "net", "dev"))
	if err != nil {
		return nil, fmt.Errorf("cgroupstats: %w", err)
	}
	defer f.Close()
	var out []Interface
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		name = strings.TrimSpace(name)
		if !ok || name == "lo" {
			continue // the two header lines have no colon
		}
		fs := strings.Fields(rest)
		if len(fs) < 16 {
			continue
		}
		n := make([]uint64, 16)
		for i := range n {
			n[i], _ = strconv.ParseUint(fs[i], 10, 64)
		}
		// receive: bytes packets errs drop fifo frame compressed multicast; transmit: bytes packets errs drop ...
		out = append(out, Interface{Name: name,
			RxBytes: n[0], RxPackets: n[1], RxErrors: n[2], RxDropped: n[3],
			TxBytes: n[8], TxPackets: n[9], TxErrors: n[10], TxDropped: n[11]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cgroupstats: read net/dev of %d: %w", pid, err)
	}
	return out, nil
}
