package companionexec

import "testing"

func TestSubcommandSkipsOnlyBerthsOwnFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
		ok   bool
	}{
		{[]string{"kubectl", "get", "pods"}, "kubectl", true},
		{[]string{"--log-level", "debug", "agent", "--node-name", "a"}, "agent", true},
		{[]string{"--log-level=debug", "runtime"}, "runtime", true},
		{[]string{"--log-level"}, "", false},
		{[]string{"--help", "kubectl"}, "", false},
		{[]string{"-h"}, "", false},
		{nil, "", false},
		{[]string{"server", "--disable-agent"}, "server", true},
	} {
		got, ok := subcommand(tc.args)
		if got != tc.want || ok != tc.ok {
			t.Errorf("subcommand(%q) = %q, %v; want %q, %v", tc.args, got, ok, tc.want, tc.ok)
		}
	}
}
