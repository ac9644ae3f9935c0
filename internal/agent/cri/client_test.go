package cri

import "testing"

func TestTarget(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		wantErr  bool
	}{
		{in: "unix:///run/berth/runtime.sock", want: "unix:///run/berth/runtime.sock"},
		{in: "/run/containerd/containerd.sock", want: "unix:///run/containerd/containerd.sock"},
		{in: "tcp://127.0.0.1:1234", wantErr: true},
		{in: "unix://relative.sock", wantErr: true},
		{in: "", wantErr: true},
	} {
		got, err := Target(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("Target(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}
