package differential

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
)

// objectDiff lists up to max paths where a and b (decoded JSON) differ,
// each with both values, kube-apiserver's first.
func objectDiff(a, b any, max int) []string {
	var out []string
	var walk func(path string, a, b any)
	walk = func(path string, a, b any) {
		if len(out) >= max || reflect.DeepEqual(a, b) {
			return
		}
		am, aok := a.(map[string]any)
		bm, bok := b.(map[string]any)
		if aok && bok {
			keys := map[string]bool{}
			for k := range am {
				keys[k] = true
			}
			for k := range bm {
				keys[k] = true
			}
			sorted := make([]string, 0, len(keys))
			for k := range keys {
				sorted = append(sorted, k)
			}
			sort.Strings(sorted)
			for _, k := range sorted {
				walk(path+"."+k, am[k], bm[k])
			}
			return
		}
		al, aok := a.([]any)
		bl, bok := b.([]any)
		if aok && bok && len(al) == len(bl) {
			for i := range al {
				walk(path+"["+strconv.Itoa(i)+"]", al[i], bl[i])
			}
			return
		}
		out = append(out, fmt.Sprintf("%s: %s vs %s", path, short(a), short(b)))
	}
	walk("", a, b)
	return out
}

func short(v any) string {
	if v == nil {
		return "(none)"
	}
	data, _ := json.Marshal(v)
	if len(data) > 400 {
		return string(data[:400]) + "..."
	}
	return string(data)
}
