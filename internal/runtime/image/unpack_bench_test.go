package image

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/berth/berth/internal/testkit/hostcheck"
)

// BenchmarkUnpackLayer unpacks a layer of 5000 small files four
// directories deep, as a language runtime's layer is: the cost of opening
// every parent beneath the root per entry.
func BenchmarkUnpackLayer(b *testing.B) {
	hostcheck.Require(b, hostcheck.Root)
	var entries []entry
	for d := range 50 {
		dirName := fmt.Sprintf("usr/lib/pkg%02d/mod", d)
		entries = append(entries, dir("usr"), dir("usr/lib"), dir(fmt.Sprintf("usr/lib/pkg%02d", d)), dir(dirName))
		for f := range 100 {
			entries = append(entries, file(fmt.Sprintf("%s/f%03d.py", dirName, f), "print('x')\n"))
		}
	}
	raw := tarBytes(b, entries...)
	for b.Loop() {
		if err := unpackLayer(b.TempDir(), bytes.NewReader(raw), DefaultMaxLayerSize); err != nil {
			b.Fatal(err)
		}
	}
}
