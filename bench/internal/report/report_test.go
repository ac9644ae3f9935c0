package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteReplacesOnlyItsSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.md")
	if err := Write(path, "a", "first a"); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, "b", "only b"); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, "a", "second a"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	doc := string(data)
	if strings.Contains(doc, "first a") || !strings.Contains(doc, "second a") || !strings.Contains(doc, "only b") {
		t.Fatalf("unexpected document:\n%s", doc)
	}
	if strings.Index(doc, "second a") > strings.Index(doc, "only b") {
		t.Errorf("section a moved:\n%s", doc)
	}
}
