package memtrim

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// mapping is one read-only, file-backed mapping of the running executable.
type mapping struct {
	Start, End uint64
	// Anonymous is how much of it was copied on write: such a mapping is
	// never dropped, since dropping would restore the file's bytes.
	AnonymousKB uint64
	RSSKB       uint64
}

func dropStartupPages() (freedKB uint64, err error) {
	maps, err := executableMappings()
	if err != nil {
		return 0, err
	}
	for _, m := range maps {
		if m.AnonymousKB != 0 {
			continue
		}
		// MADV_DONTNEED on a clean private file mapping only drops page
		// table entries; the next access reads the page cache again.
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(m.Start), uintptr(m.End-m.Start), unix.MADV_DONTNEED); errno != 0 {
			return freedKB, fmt.Errorf("madvise %x-%x: %w", m.Start, m.End, errno)
		}
		freedKB += m.RSSKB
	}
	return freedKB, nil
}

// executableMappings lists the running executable's read-only private
// mappings, from /proc/self/smaps.
func executableMappings() ([]mapping, error) {
	var exe unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &exe); err != nil {
		return nil, fmt.Errorf("stat executable: %w", err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseSmaps(f, exe.Ino)
}

// parseSmaps picks from smaps the private, non-writable mappings of the file
// with inode ino, with their resident and copied-on-write sizes.
func parseSmaps(r io.Reader, ino uint64) ([]mapping, error) {
	var (
		out     []mapping
		current *mapping
	)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if start, end, ok := mappingRange(fields[0]); ok {
			current = nil
			if len(fields) >= 6 && readOnlyPrivate(fields[1]) && fields[4] == strconv.FormatUint(ino, 10) {
				out = append(out, mapping{Start: start, End: end})
				current = &out[len(out)-1]
			}
			continue
		}
		if current == nil || len(fields) < 2 {
			continue
		}
		kb, err := strconv.ParseUint(fields[1], 10, 64)
		if err != nil {
			continue
		}
		switch fields[0] {
		case "Rss:":
			current.RSSKB = kb
		case "Anonymous:":
			current.AnonymousKB = kb
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read smaps: %w", err)
	}
	return out, nil
}

// mappingRange parses "start-end" in hex, the first field of a mapping's
// header line; other lines of smaps ("Rss:") do not parse.
func mappingRange(s string) (start, end uint64, ok bool) {
	a, b, found := strings.Cut(s, "-")
	if !found {
		return 0, 0, false
	}
	start, err1 := strconv.ParseUint(a, 16, 64)
	end, err2 := strconv.ParseUint(b, 16, 64)
	return start, end, err1 == nil && err2 == nil && end > start
}

func readOnlyPrivate(perms string) bool {
	return len(perms) == 4 && perms[1] == '-' && perms[3] == 'p'
}
