package differential

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// knownDifference is one line of testdata/known-differences.txt:
// "CASE-ID CATEGORY REASON...".
type knownDifference struct {
	category, reason string
	line             int
}

func loadKnown(t *testing.T) map[string]knownDifference {
	t.Helper()
	path := filepath.Join("testdata", "known-differences.txt")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	known := map[string]knownDifference{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 3 {
			t.Fatalf("%s:%d: want CASE-ID CATEGORY REASON, got %q", path, n, line)
		}
		if prev, ok := known[fields[0]]; ok {
			t.Fatalf("%s:%d: %s is listed already on line %d", path, n, fields[0], prev.line)
		}
		known[fields[0]] = knownDifference{category: fields[1], reason: strings.Join(fields[2:], " "), line: n}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return known
}

// timingCategories are the categories whose difference depends on timing:
// whether a controller berth server runs, or the API priority and fairness
// configuration controller or CRD controllers both run, has acted by the
// time the object is read. A listed case of one may
// answer the same.
var timingCategories = map[string]bool{"controllers-in-server": true, "flowcontrol-status": true, "crd-controllers": true}

// report fails the test on every difference known-differences.txt does not
// list and on every listed case that is the same or does not exist, and
// logs the counts: cases, same, different by category and by aspect.
func report(t *testing.T, results []caseResult, known map[string]knownDifference, resources int, took time.Duration) {
	t.Helper()
	byCategory, byAspect := map[string]int{}, map[string]int{}
	same := 0
	var unlisted []string
	ran := map[string]bool{}
	for _, r := range results {
		ran[r.ID] = true
		aspects := r.aspects()
		k, listed := known[r.ID]
		switch {
		case len(aspects) == 0 && listed && !timingCategories[k.category]:
			t.Errorf("%s: listed on line %d of known-differences.txt (%s), but berth answers as kube-apiserver does now: remove the line", r.ID, k.line, k.reason)
			same++
		case len(aspects) == 0:
			same++
		case !listed:
			unlisted = append(unlisted, describe(r, aspects))
			byCategory["unlisted"]++
		default:
			byCategory[k.category]++
		}
		for _, a := range aspects {
			byAspect[a]++
		}
	}
	for id, k := range known {
		if !ran[id] {
			t.Errorf("known-differences.txt line %d lists %s, which is no case", k.line, id)
		}
	}
	if len(unlisted) > 0 {
		sort.Strings(unlisted)
		t.Errorf("%d differences are not in testdata/known-differences.txt:\n%s", len(unlisted), strings.Join(unlisted, "\n"))
	}
	t.Logf("%d resources, %d cases: %d the same, %d different, in %s", resources, len(results), same, len(results)-same, took.Round(time.Second))
	t.Logf("different by category: %s", counts(byCategory))
	t.Logf("different by aspect: %s", counts(byAspect))
}

func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// describe says how the case's answers differ: code, reason and causes of
// both, and where the objects, keys and stored versions differ.
func describe(r caseResult, aspects []string) string {
	u, b := r.Upstream, r.Berth
	s := fmt.Sprintf("%s (%s): kube-apiserver %d %s %v, berth %d %s %v", r.ID, strings.Join(aspects, ","),
		u.Code, u.Reason, u.Causes, b.Code, b.Reason, b.Causes)
	for _, d := range objectDiff(u.Object, b.Object, 8) {
		s += "\n    object" + d
	}
	if !reflect.DeepEqual(u.Keys, b.Keys) || !reflect.DeepEqual(u.Stored, b.Stored) {
		s += fmt.Sprintf("\n    stored: %v %v vs %v %v", u.Keys, u.Stored, b.Keys, b.Stored)
	}
	return s
}

func osMkdir(dir string) error { return os.MkdirAll(dir, 0o700) }
