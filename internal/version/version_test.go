package version

import "testing"

func TestKubernetesRelease(t *testing.T) {
	for in, want := range map[string]string{"v0.37.2": "v1.37.2", "v0.30.0-rc.1": "v1.30.0-rc.1", "(devel)": "(devel)"} {
		if got := KubernetesRelease(in); got != want {
			t.Errorf("KubernetesRelease(%q) = %q, want %q", in, got, want)
		}
	}
}
