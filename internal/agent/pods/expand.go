package pods

import "k8s.io/kubernetes/third_party/forked/golang/expansion"

// expand replaces $(VAR) references in s as the kubelet does for command,
// args and env values (upstream's expansion package): $$ is an escaped $,
// a name is looked up in each of vars in turn, and a reference to an
// unknown variable (or an unclosed one) stays as written.
func expand(s string, vars ...map[string]string) string {
	return expansion.Expand(s, expansion.MappingFuncFor(vars...))
}

func expandAll(list []string, vars map[string]string) []string {
	if list == nil {
		return nil
	}
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = expand(s, vars)
	}
	return out
}
