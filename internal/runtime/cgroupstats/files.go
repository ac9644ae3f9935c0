package cgroupstats

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// readUint reads a file holding one number; "max" (v2's unlimited) is 0.
func readUint(dir, name string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", name, err)
	}
	return v, nil
}

// optUint reads a file that some kernels or configurations lack (swap
// accounting, memory.peak...): absent or unreadable reads as 0.
func optUint(dir, name string) uint64 {
	v, _ := readUint(dir, name)
	return v
}

// readKeyed reads a "key value" per line file (memory.stat, cpu.stat,
// memory.events); missing files give an empty map.
func readKeyed(dir, name string) map[string]uint64 {
	out := map[string]uint64{}
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
			out[k] = n
		}
	}
	return out
}

// parseDevice reads "major:minor".
func parseDevice(s string) (uint64, uint64, bool) {
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, false
	}
	major, err1 := strconv.ParseUint(a, 10, 64)
	minor, err2 := strconv.ParseUint(b, 10, 64)
	return major, minor, err1 == nil && err2 == nil
}
