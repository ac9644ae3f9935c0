package node

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestParseThresholdsReplacesTheDefaults(t *testing.T) {
	th, err := ParseThresholds(map[string]string{"memory.available": "1Gi", "nodefs.available": "0%", "pid.available": "25%"})
	if err != nil {
		t.Fatal(err)
	}
	if len(th) != 2 {
		t.Fatalf("thresholds = %v, want memory and pid only (0%% turns nodefs off)", th)
	}
	if q := th["memory.available"].Quantity; q == nil || q.Value() != 1<<30 {
		t.Errorf("memory.available = %v, want 1Gi", th["memory.available"])
	}
	if p := th["pid.available"].Percentage; p != 0.25 {
		t.Errorf("pid.available = %v, want 25%%", p)
	}
}

func TestParseThresholdsRefusesWhatItCannotApply(t *testing.T) {
	for statement, want := range map[string]string{
		"imagefs.available<15%": "not one the agent measures",
		"nodefs.available<150%": "between 0% and 100%",
		"nodefs.available<x%":   "between 0% and 100%",
		"memory.available<-1Mi": "must be positive",
		"memory.available<lots": "quantities must match",
	} {
		signal, value, _ := strings.Cut(statement, "<")
		_, err := ParseThresholds(map[string]string{signal: value})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", statement, err, want)
		}
	}
}

func TestPressureConditionsFollowTheThresholds(t *testing.T) {
	facts := Facts{MemoryBytes: 8 << 30, MemoryAvailable: 6 << 30, DiskBytes: 100 << 30, DiskAvailable: 9 << 30, PIDMax: 1000, PIDsInUse: 950}
	pressure := func(th Thresholds) map[corev1.NodeConditionType]corev1.ConditionStatus {
		out := map[corev1.NodeConditionType]corev1.ConditionStatus{}
		for _, c := range (Observation{Facts: facts, Thresholds: th}).conditions() {
			out[c.Type] = c.Status
		}
		return out
	}
	got := pressure(DefaultThresholds)
	if got[corev1.NodeDiskPressure] != corev1.ConditionTrue || got[corev1.NodePIDPressure] != corev1.ConditionTrue || got[corev1.NodeMemoryPressure] != corev1.ConditionFalse {
		t.Errorf("defaults with 9%% disk and 5%% PIDs free, 6Gi memory free: %v, want disk and PID pressure only", got)
	}
	noDisk, err := ParseThresholds(map[string]string{"memory.available": "7Gi", "pid.available": "1%"})
	if err != nil {
		t.Fatal(err)
	}
	got = pressure(noDisk)
	if got[corev1.NodeDiskPressure] != corev1.ConditionFalse || got[corev1.NodePIDPressure] != corev1.ConditionFalse || got[corev1.NodeMemoryPressure] != corev1.ConditionTrue {
		t.Errorf("memory.available<7Gi,pid.available<1%%: %v, want memory pressure only", got)
	}
}
