package linkcheck

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestExecutablesLinkOnlyTheirOwnPackages: each companion executable links
// none of the packages of the processes it does not run. berth (the server)
// is the control: it must link the server's packages, so a wrong tree name
// (which would match nothing) fails the test instead of passing it.
func TestExecutablesLinkOnlyTheirOwnPackages(t *testing.T) {
	runtimeTree := []string{module + "/internal/runtime"}
	for _, tc := range []struct {
		main      string
		forbidden [][]string
	}{
		{"./cmd/berth-agent", [][]string{ServerPackages, Kubectl}},
		{"./cmd/berth-kubectl", [][]string{ServerPackages, Agent, runtimeTree}},
		{"./cmd/berth-runtime", [][]string{ServerPackages, Kubectl}},
		{"./cmd/berth-monitor", [][]string{ServerPackages, Kubectl, Agent}},
		// The server execs berth-agent and berth-kubectl rather than
		// linking them.
		{"./cmd/berth", [][]string{Kubectl, {module + "/internal/cli/agentcli", module + "/internal/agent/gc"}}},
	} {
		t.Run(tc.main, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			linked, err := Linked(ctx, tc.main, slices.Concat(tc.forbidden...))
			if err != nil {
				t.Fatal(err)
			}
			if len(linked) > 0 {
				t.Errorf("%s links %d packages it must not, e.g. %v", tc.main, len(linked), linked[:min(len(linked), 8)])
			}
		})
	}
	t.Run("berth links the server's packages", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		linked, err := Linked(ctx, "./cmd/berth", ServerPackages)
		if err != nil {
			t.Fatal(err)
		}
		for _, tree := range ServerPackages {
			if !slices.ContainsFunc(linked, func(pkg string) bool { return inTrees(pkg, []string{tree}) }) {
				t.Errorf("./cmd/berth links nothing in %s: the tree's name is wrong, so the companions' check of it proves nothing", tree)
			}
		}
	})
}
