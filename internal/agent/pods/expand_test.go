package pods

import "testing"

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "1", "NAME": "web", "EMPTY": ""}
	for in, want := range map[string]string{
		"plain":           "plain",
		"$(A)":            "1",
		"x-$(NAME)-y":     "x-web-y",
		"$(A)$(A)":        "11",
		"$$(A)":           "$(A)",
		"$(UNKNOWN)":      "$(UNKNOWN)",
		"$(EMPTY)|":       "|",
		"$(unclosed":      "$(unclosed",
		"cost: $5":        "cost: $5",
		"trailing $":      "trailing $",
		"$()":             "$()",
		"$(A) and $$$(A)": "1 and $1",
	} {
		if got := expand(in, vars); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}
