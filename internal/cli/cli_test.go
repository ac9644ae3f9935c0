package cli

import (
	"bytes"
	"strings"
	"testing"
)

func run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := NewRootCommand(&out, &errOut)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errOut.String(), err
}

// The module versions themselves are only in a real binary's build info;
// cmd/berth's test checks them.
func TestVersionNamesAPIVersions(t *testing.T) {
	out, _, err := run(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"berth v", "git commit:", "kubernetes api:", "cri api:"} {
		if !strings.Contains(out, want) {
			t.Errorf("version output lacks %q:\n%s", want, out)
		}
	}
}

func TestBadFlagIsOneClearError(t *testing.T) {
	for _, args := range [][]string{
		{"version", "--no-such-flag"},
		{"--log-level", "loud", "version"},
	} {
		_, _, err := run(t, args...)
		if err == nil {
			t.Errorf("%v: no error", args)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || msg == "" {
			t.Errorf("%v: error is not one line: %q", args, msg)
		}
	}
}
