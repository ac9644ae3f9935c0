package server

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestAuditLogPathIsCheckedBeforeStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := Config{DataDir: filepath.Join(dir, "data"), BindAddress: "127.0.0.1", Port: 6443}
	for path, wantErr := range map[string]bool{
		"":                                   false,
		filepath.Join(dir, "audit.log"):      false,
		filepath.Join(dir, "missing", "log"): true,
	} {
		cfg := base
		cfg.AuditLogPath = path
		err := cfg.Validate()
		if (err != nil) != wantErr || (wantErr && !strings.Contains(err.Error(), "--audit-log-path")) {
			t.Errorf("--audit-log-path %q: err = %v, want error %v", path, err, wantErr)
		}
	}
}
