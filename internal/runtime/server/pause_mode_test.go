package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSandboxRecordReadsLegacyPauseBooleans: records written before the
// pause mode was one field said it with two booleans, or (older still)
// with neither, for a pause container.
func TestSandboxRecordReadsLegacyPauseBooleans(t *testing.T) {
	for _, tc := range []struct {
		record string
		want   pauseMode
	}{
		{`{"id":"s","config":{},"noPause":true}`, pauseNone},
		{`{"id":"s","config":{},"pauseProcess":true}`, pauseProcess},
		{`{"id":"s","config":{}}`, pauseContainer},
		{`{"id":"s","config":{},"pause":"none","pauseProcess":true}`, pauseNone},
	} {
		var sb sandbox
		if err := json.Unmarshal([]byte(tc.record), &sb); err != nil {
			t.Fatalf("%s: %v", tc.record, err)
		}
		if sb.Pause != tc.want {
			t.Errorf("%s: pause mode %q, want %q", tc.record, sb.Pause, tc.want)
		}
	}
}

func TestSandboxRecordWritesOnlyThePauseMode(t *testing.T) {
	data, err := json.Marshal(sandbox{ID: "s", Pause: pauseNone, Config: &PodSandboxConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	if fields["pause"] != "none" || fields["noPause"] != nil || fields["pauseProcess"] != nil {
		t.Errorf("record %s: want pause \"none\" and no legacy booleans", data)
	}
	var back sandbox
	if err := json.Unmarshal(data, &back); err != nil || back.Pause != pauseNone {
		t.Errorf("read back: pause mode %q, %v; want %q", back.Pause, err, pauseNone)
	}
}

func TestSandboxRecordRejectsAnUnknownPauseMode(t *testing.T) {
	var sb sandbox
	err := json.Unmarshal([]byte(`{"id":"s","config":{},"pause":"vm"}`), &sb)
	if err == nil || !strings.Contains(err.Error(), `unknown pause mode "vm"`) {
		t.Errorf("pause mode vm: %v, want an unknown pause mode error", err)
	}
}

// TestRestartMigratesLegacyPauseRecords: sandboxes whose records carry the
// legacy booleans recover as what they were, and recovery rewrites their
// records with the mode.
func TestRestartMigratesLegacyPauseRecords(t *testing.T) {
	h := newHarness(t)
	infraless, err := h.runConfig(infralessConfig("infraless"))
	if err != nil {
		t.Fatal(err)
	}
	withPause, cfg := h.runSandbox("with-pause")
	h.stop()
	legacy := map[string]string{infraless: "noPause", withPause: "pauseProcess"}
	for id, flag := range legacy {
		rewriteRecord(t, h.sandboxFile(id), func(rec map[string]any) {
			delete(rec, "pause")
			rec[flag] = true
		})
	}
	h.start()

	if info := h.sandboxInfo(infraless); info["state"] != "SANDBOX_READY" || info["pause"] != false {
		t.Errorf("legacy infraless sandbox recovered as %v, want ready without pause", info)
	}
	if info := h.sandboxInfo(withPause); info["state"] != "SANDBOX_READY" || info["pause"] != true {
		t.Errorf("legacy pause-process sandbox recovered as %v, want ready with pause", info)
	}
	// A pause process set no sysctls: the container's spec must.
	h.createContainer(withPause, cfg, "c")
	if h.specs.lastIn.SysctlsSet {
		t.Error("container of a legacy pause-process sandbox generated as if its pause container had set the sysctls")
	}
	for id, want := range map[string]string{infraless: "none", withPause: "process"} {
		if rec := readRecord(t, h.sandboxFile(id)); rec["pause"] != want || rec[legacy[id]] != nil {
			t.Errorf("record of %s after recovery: %v, want pause %q and no %s", id, rec, want, legacy[id])
		}
	}
}

func (h *harness) sandboxFile(id string) string {
	return filepath.Join(h.stateDir, "sandboxes", id+".json")
}

func readRecord(t *testing.T, file string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return rec
}

// rewriteRecord lets edit change a JSON record on disk.
func rewriteRecord(t *testing.T, file string, edit func(map[string]any)) {
	t.Helper()
	rec := readRecord(t, file)
	edit(rec)
	data, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
