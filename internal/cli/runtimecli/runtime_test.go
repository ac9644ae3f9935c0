package runtimecli

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/berth/berth/internal/cli/clibase"
)

func TestParseMirrors(t *testing.T) {
	got, err := parseMirrors([]string{"gcr.io=http://127.0.0.1:5000", "gcr.io=http://127.0.0.1:5001", "docker.io=https://m"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"gcr.io": {"http://127.0.0.1:5000", "http://127.0.0.1:5001"}, "docker.io": {"https://m"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v", got)
	}
	for _, bad := range []string{"gcr.io", "=http://x", "gcr.io="} {
		if _, err := parseMirrors([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseByteSize(t *testing.T) {
	for in, want := range map[string]int64{"1": 1, "1048576": 1 << 20, "512Mi": 512 << 20, "64Gi": 64 << 30, "2Ti": 2 << 40, "3Ki": 3 << 10} {
		if got, err := parseByteSize(in); err != nil || got != want {
			t.Errorf("parseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "-1", "1G", "1.5Gi", "Gi", "9999999999Ti"} {
		if _, err := parseByteSize(bad); err == nil {
			t.Errorf("parseByteSize(%q) accepted", bad)
		}
	}
}

func TestRuntimeCommandRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"runtime", "--max-layer-size", "lots"},
		{"runtime", "--registry-mirror", "nohost"},
		{"runtime", "--root", t.TempDir(), "--state-dir", t.TempDir(), "--listen", "tcp://127.0.0.1:1"},
		{"runtime", "--root", t.TempDir(), "--state-dir", t.TempDir(), "--listen", "unix://" + t.TempDir() + "/s.sock", "--stream-address", "0.0.0.0:0"},
	} {
		var out, errOut bytes.Buffer
		root := clibase.NewRoot(&out, &errOut)
		root.AddCommand(NewCommand())
		root.SetArgs(args)
		err := root.Execute()
		if err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: want a one-line error, got %v", args, err)
		}
	}
}
