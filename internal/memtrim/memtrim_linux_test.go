package memtrim

import (
	"io"
	"log/slog"
	"strings"
	"testing"
)

const smapsSample = `00400000-02000000 r-xp 00000000 fd:01 77 /usr/bin/berth
Rss:               20480 kB
Anonymous:             0 kB
02000000-03000000 r--p 01c00000 fd:01 77 /usr/bin/berth
Rss:                8192 kB
Anonymous:             4 kB
03000000-03100000 rw-p 02c00000 fd:01 77 /usr/bin/berth
Rss:                 512 kB
Anonymous:           256 kB
7f0000000000-7f0000100000 r--p 00000000 fd:01 78 /usr/lib/other.so
Rss:                 100 kB
Anonymous:             0 kB
7f0000100000-7f0000200000 r--s 00000000 fd:01 77 /usr/bin/berth
Rss:                 100 kB
`

func TestParseSmapsPicksTheExecutablesReadOnlyPrivateMappings(t *testing.T) {
	got, err := parseSmaps(strings.NewReader(smapsSample), 77)
	if err != nil {
		t.Fatal(err)
	}
	want := []mapping{
		{Start: 0x400000, End: 0x2000000, RSSKB: 20480},
		{Start: 0x2000000, End: 0x3000000, RSSKB: 8192, AnonymousKB: 4},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mapping %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func residentKB(t *testing.T) uint64 {
	t.Helper()
	maps, err := executableMappings()
	if err != nil {
		t.Fatal(err)
	}
	var kb uint64
	for _, m := range maps {
		kb += m.RSSKB
	}
	return kb
}

// The test binary's own start-up touched its text and read-only data; after
// the drop less of it is resident, and the code it runs next still works.
func TestDropStartupPagesShrinksTheExecutablesResidentPages(t *testing.T) {
	before := residentKB(t)
	if before == 0 {
		t.Fatal("no resident pages of the executable found in /proc/self/smaps")
	}
	freed, err := dropStartupPages()
	if err != nil {
		t.Fatal(err)
	}
	after := residentKB(t)
	t.Logf("resident pages of the executable: %d KiB before, %d KiB after; %d KiB dropped", before, after, freed)
	if freed == 0 || after >= before {
		t.Fatalf("resident pages of the executable did not shrink: %d KiB before, %d KiB after", before, after)
	}
	DropStartupPages(slog.New(slog.NewTextHandler(io.Discard, nil)))
	if s := strings.Repeat("ok", 2); s != "okok" {
		t.Fatalf("code after the drop misbehaves: %q", s)
	}
}
