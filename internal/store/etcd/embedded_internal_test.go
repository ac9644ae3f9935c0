package etcd

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"go.uber.org/zap/zapcore"
)

// TestEmbeddedConfigIsDurableAndListenerFree guards the settings the design
// depends on: fsync stays on, and no URL is configured to listen on.
func TestEmbeddedConfigIsDurableAndListenerFree(t *testing.T) {
	t.Parallel()
	cfg := embeddedConfig(t.TempDir(), slog.New(slog.DiscardHandler))
	if cfg.UnsafeNoFsync {
		t.Fatal("embedded etcd runs without fsync")
	}
	if n := len(cfg.ListenClientUrls) + len(cfg.ListenClientHttpUrls) + len(cfg.ListenPeerUrls) + len(cfg.ListenMetricsUrls); n != 0 {
		t.Fatalf("embedded etcd configured with %d listen URLs", n)
	}
	if cfg.QuotaBackendBytes <= 0 {
		t.Fatal("no backend quota")
	}
	// A member without followers keeps no raft entries for them to catch up.
	if cfg.SnapshotCatchUpEntries == 0 || cfg.SnapshotCatchUpEntries > 1000 {
		t.Fatalf("snapshot catch-up entries %d: want a few (0 means etcd's default 5000)", cfg.SnapshotCatchUpEntries)
	}
}

func TestZapBridgeLevelsFieldsAndDrops(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	lg := zapToSlog(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), zapcore.WarnLevel, "noise")
	lg.Info("below the level")
	lg.Warn("noise")
	lg.With(zapcore.Field{Key: "member", Type: zapcore.StringType, String: "m1"}).Error("disk full", zapcore.Field{Key: "bytes", Type: zapcore.Int64Type, Integer: 42})
	out := buf.String()
	if strings.Contains(out, "below the level") || strings.Contains(out, "noise") {
		t.Fatalf("bridge passed a filtered message: %s", out)
	}
	if !strings.Contains(out, "level=ERROR") || !strings.Contains(out, `msg="disk full"`) || !strings.Contains(out, "member=m1") || !strings.Contains(out, "bytes=42") {
		t.Fatalf("bridge output %q lacks the error with its fields", out)
	}
}
