// Package procnet tells tests which sockets a process listens on, from
// /proc, so that "this component opens no port" is checked, not assumed.
package procnet

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Listening returns the listening sockets process pid holds: TCP (v4 and
// v6) in LISTEN state as "tcp HEXADDR:HEXPORT"/"tcp6 ...", and listening
// unix sockets as "unix PATH". The tables are read in pid's network
// namespace.
func Listening(pid int) ([]string, error) {
	mine, err := socketInodes(pid)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, table := range []string{"tcp", "tcp6"} {
		rows, err := readTable(pid, table)
		if err != nil {
			return nil, err
		}
		for _, f := range rows {
			// sl local_address rem_address st ... inode (field 9); st 0A = LISTEN
			if len(f) > 9 && f[3] == "0A" && mine[f[9]] {
				out = append(out, table+" "+f[1])
			}
		}
	}
	rows, err := readTable(pid, "unix")
	if err != nil {
		return nil, err
	}
	for _, f := range rows {
		// Num RefCount Protocol Flags Type St Inode [Path]; flags 00010000 = listening
		if len(f) > 6 && f[3] == "00010000" && mine[f[6]] {
			out = append(out, "unix "+strings.Join(f[7:], " "))
		}
	}
	return out, nil
}

// TCPPort renders a port as Listening shows it in a local address.
func TCPPort(port int) string { return fmt.Sprintf(":%04X", port) }

func socketInodes(pid int) (map[string]bool, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read fds: %w", err)
	}
	inodes := map[string]bool{}
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err == nil && strings.HasPrefix(target, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")] = true
		}
	}
	return inodes, nil
}

func readTable(pid int, name string) ([][]string, error) {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "net", name))
	if os.IsNotExist(err) {
		return nil, nil // e.g. no IPv6 in this kernel
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows [][]string
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		rows = append(rows, strings.Fields(sc.Text()))
	}
	return rows, sc.Err()
}
