// Package report writes a benchmark's figures into docs/benchmarks.md,
// replacing only that benchmark's section (between its markers), so each
// benchmark can be rerun on its own.
package report

import (
	"fmt"
	"os"
	"strings"
)

// Write replaces the section named name in path with body (creating either as needed).
func Write(path, name, body string) error {
	start, end := "<!-- bench:"+name+":start -->", "<!-- bench:"+name+":end -->"
	section := start + "\n" + strings.TrimRight(body, "\n") + "\n" + end
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	doc := string(old)
	i, j := strings.Index(doc, start), strings.Index(doc, end)
	switch {
	case i >= 0 && j > i:
		doc = doc[:i] + section + doc[j+len(end):]
	case doc == "":
		doc = "# berth benchmarks\n\nFigures written by the programs under bench/; each section says the command that produced it.\n\n" + section + "\n"
	default:
		doc = strings.TrimRight(doc, "\n") + "\n\n" + section + "\n"
	}
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
