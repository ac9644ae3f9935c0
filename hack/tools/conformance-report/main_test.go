package main

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

const (
	configMap = "[sig-node] ConfigMap should be consumable from pods in volume [NodeConformance] [Conformance]"
	cronJob   = "[sig-apps] CronJob should schedule multiple jobs concurrently [Conformance]"
	hostIP    = "[sig-node] Pods should get a host IP [NodeConformance] [Conformance]"
	limits    = "[sig-scheduling] SchedulerPredicates [Serial] validates resource limits of pods that are allowed to run [Conformance]"
	dns       = "[sig-network] DNS should provide DNS for the cluster [Conformance]"
	secrets   = "[sig-storage] Secrets should be consumable from pods in volume [NodeConformance] [Conformance]"
	protocols = "[sig-network] Services should serve endpoints on same port and different protocols [Conformance]"
)

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func parseFixture(t *testing.T, name string) Run {
	t.Helper()
	r, err := ParseJUnit(fixture(t, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r
}

func TestParseConformanceListJoinsFoldedNames(t *testing.T) {
	names, err := ParseConformanceList(fixture(t, "conformance.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{cronJob, dns, protocols, configMap, hostIP, limits, secrets}
	if strings.Join(names, "\n") != strings.Join(want, "\n") {
		t.Fatalf("names:\n%s\nwant (sorted, folded lines joined):\n%s", strings.Join(names, "\n"), strings.Join(want, "\n"))
	}
	if _, err := ParseConformanceList([]byte("[]")); err == nil {
		t.Error("an empty list parsed without error")
	}
}

func TestParseJUnitReadsSpecsAndSuiteNodes(t *testing.T) {
	r := parseFixture(t, "shard1.xml")
	if len(r.SuiteFailures) != 0 {
		t.Errorf("suite failures %v, want none (set-up passed)", r.SuiteFailures)
	}
	for _, node := range []string{"[SynchronizedBeforeSuite]", "", "Kubernetes e2e suite report"} {
		if _, ok := r.Cases[node]; ok {
			t.Errorf("suite node %q taken for a spec", node)
		}
	}
	if c := r.Cases[configMap]; c.State != "passed" || c.Duration != 12500*time.Millisecond {
		t.Errorf("configMap: %+v, want passed in 12.5s", c)
	}
	c := r.Cases[hostIP]
	if c.State != "failed" || c.FirstLine != "Timed out after 300.000s." {
		t.Errorf("hostIP: state %q first line %q, want failed with the first non-empty line without [FAILED]", c.State, c.FirstLine)
	}
	if !strings.Contains(c.Text, "Expected pod to be running") {
		t.Errorf("hostIP text %q lacks the rest of the failure", c.Text)
	}
	if c, ok := r.Cases["[sig-node] Something that is not conformance [Feature:Foo]"]; ok {
		t.Errorf("a spec the filters left out was read as %+v, want it absent", c)
	}
	if c := parseFixture(t, "shard2.xml").Cases[protocols]; c.State != "skipped" || c.FirstLine != "skipped - Only supported for providers [gce gke] (not local)" {
		t.Errorf("a spec that skipped itself: %+v", c)
	}

	failed := parseFixture(t, "setup-failed.xml")
	if len(failed.Cases) != 0 {
		t.Errorf("cases after a set-up failure: %v, want none", failed.Cases)
	}
	if len(failed.SuiteFailures) != 1 || failed.SuiteFailures[0].Node != "[SynchronizedBeforeSuite]" ||
		failed.SuiteFailures[0].FirstLine != `Failed to get kubernetes service ClusterIP: services "kubernetes" not found` {
		t.Errorf("set-up failure: %+v", failed.SuiteFailures)
	}
	if _, err := ParseJUnit([]byte("<testsuites><testsuite>")); err == nil {
		t.Error("truncated XML parsed without error")
	}
}

func TestMergeShardsKeepsTheRunThatRanASpec(t *testing.T) {
	m := Merge([]Run{parseFixture(t, "shard1.xml"), parseFixture(t, "shard2.xml")})
	if c := m.Cases[configMap]; c.State != "passed" {
		t.Errorf("configMap after a later shard skipped it: %q, want passed from the shard that ran it", c.State)
	}
	if c := m.Cases[limits]; c.State != "passed" {
		t.Errorf("limits from shard 2: %q", c.State)
	}
	if c := m.Cases[cronJob]; c.State != "failed" {
		t.Errorf("cronJob from shard 1: %q", c.State)
	}
	// A later run that ran the spec replaces an earlier result.
	rerun := Run{Cases: map[string]CaseResult{hostIP: {Name: hostIP, State: "passed"}}}
	if c := Merge([]Run{parseFixture(t, "shard1.xml"), rerun}).Cases[hostIP]; c.State != "passed" {
		t.Errorf("hostIP after a passing re-run: %q", c.State)
	}
}

func TestClassifyBlockedOnlyForMissingKindsOrListed(t *testing.T) {
	conf, err := ParseConformanceList(fixture(t, "conformance.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	blocked, err := parseBlocked(bytes.NewReader(fixture(t, "blocked.txt")), "blocked.txt")
	if err != nil {
		t.Fatal(err)
	}
	m := Merge([]Run{parseFixture(t, "shard1.xml"), parseFixture(t, "shard2.xml")})
	got := map[string]Result{}
	for _, r := range Classify(conf, m, blocked, nil, "run-1") {
		got[r.Name] = r
	}
	want := map[string]Status{
		configMap: StatusPassed, limits: StatusPassed,
		cronJob:   StatusBlocked, // 404 for cronjobs.batch
		dns:       StatusBlocked, // listed in blocked.txt
		hostIP:    StatusFailed,  // a time-out is berth's to fix
		secrets:   StatusNotRun,  // not in either run
		protocols: StatusSkipped, // skipped itself
	}
	for name, st := range want {
		if got[name].Status != st {
			t.Errorf("%s: %s (%s), want %s", name, got[name].Status, got[name].Detail, st)
		}
	}
	if d := got[cronJob].Detail; !strings.Contains(d, "missing from discovery") || !strings.Contains(d, "cronjobs.batch") {
		t.Errorf("cronJob detail %q should say why and keep the failure line", d)
	}
	if d := got[dns].Detail; !strings.HasPrefix(d, "cluster DNS: berth runs no DNS server") {
		t.Errorf("dns detail %q should start with the listed capability and reason", d)
	}
	// A listed test that reports a pass passed without testing: blocked.
	hollow := maps.Clone(blocked)
	hollow[limits] = BlockedEntry{Capability: "CustomResourceDefinitions", Reason: "returns early when its CRD cannot be made"}
	for _, r := range Classify(conf, m, hollow, nil, "run-1") {
		if r.Name == limits && (r.Status != StatusBlocked || !strings.Contains(r.Detail, "reported passed without testing it")) {
			t.Errorf("a listed test that passed: %s %q, want blocked", r.Status, r.Detail)
		}
	}
	if got[secrets].Run != "" || got[configMap].Run != "run-1" {
		t.Errorf("run ids: secrets %q (not run), configMap %q", got[secrets].Run, got[configMap].Run)
	}

	// A set-up failure leaves every test not run, saying why.
	for _, r := range Classify(conf, parseFixture(t, "setup-failed.xml"), blocked, nil, "run-2") {
		if r.Status != StatusNotRun || !strings.Contains(r.Detail, `services "kubernetes" not found`) {
			t.Errorf("%s after a set-up failure: %s %q", r.Name, r.Status, r.Detail)
		}
	}
}

func TestParseBlockedRejectsLinesWithoutCapabilityAndReason(t *testing.T) {
	for _, bad := range []string{"only a name\n", "name | capability\n", "name |  | \n"} {
		if _, err := parseBlocked(strings.NewReader(bad), "x"); err == nil {
			t.Errorf("%q parsed without error", bad)
		}
	}
}

func TestCompareNamesNewlyFailingAndCarryOverKeepsUnreported(t *testing.T) {
	conf, err := ParseConformanceList(fixture(t, "conformance.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	blocked, err := parseBlocked(bytes.NewReader(fixture(t, "blocked.txt")), "blocked.txt")
	if err != nil {
		t.Fatal(err)
	}
	previous, err := parseResults(string(fixture(t, "previous.tsv")), "previous.tsv")
	if err != nil {
		t.Fatal(err)
	}
	now := Classify(conf, Merge([]Run{parseFixture(t, "shard1.xml"), parseFixture(t, "shard2.xml")}), blocked, nil, "run-1")
	cmp := Compare(previous, now)
	if strings.Join(cmp.NewlyFailing, "\n") != strings.Join([]string{cronJob, hostIP}, "\n") {
		t.Errorf("newly failing %q, want cronJob (now blocked) and hostIP (now failed)", cmp.NewlyFailing)
	}
	if strings.Join(cmp.NewlyPassing, "\n") != configMap {
		t.Errorf("newly passing %q, want configMap", cmp.NewlyPassing)
	}
	carried := CarryOver(now, previous)
	for _, r := range carried {
		if r.Name == secrets && (r.Status != StatusPassed || r.Run != "2026-12-01") {
			t.Errorf("secrets (not in this run) carried as %+v, want the previous passed line", r)
		}
	}
	if s := Summarize(carried); s.Counts[StatusPassed] != 3 || s.Counts[StatusBlocked] != 2 || s.Counts[StatusFailed] != 1 || s.Counts[StatusSkipped] != 1 || s.Total != 7 {
		t.Errorf("summary %s", s)
	}
}

func TestResultsFileRoundTrips(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.tsv")
	in := []Result{
		{Name: configMap, Status: StatusPassed, Duration: 12500 * time.Millisecond, Run: "r"},
		{Name: hostIP, Status: StatusFailed, Duration: time.Second, Run: "r", Detail: "two\nlines\twith tab"},
	}
	if err := writeResultsFile(path, in); err != nil {
		t.Fatal(err)
	}
	out, err := readResultsFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[0] != in[0] || out[1].Detail != "two lines with tab" || out[1].Status != StatusFailed {
		t.Fatalf("round trip: %+v", out)
	}
	if _, err := parseResults("name\tweird\t1\tr\t\n", "x"); err == nil {
		t.Error("an unknown status parsed without error")
	}
	if missing, err := readResultsFile(filepath.Join(t.TempDir(), "none")); err != nil || missing != nil {
		t.Errorf("missing results file: %v %v, want no results and no error", missing, err)
	}
}

func TestSelectShardsAndListsBuildExactFocus(t *testing.T) {
	conf, err := ParseConformanceList(fixture(t, "conformance.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for n := 1; n <= 4; n++ {
		for _, name := range shard(conf, n, 4) {
			seen[name]++
		}
	}
	for _, name := range conf {
		if seen[name] != 1 {
			t.Errorf("%s in %d shards, want exactly 1", name, seen[name])
		}
	}
	for _, bad := range []string{"0/3", "4/3", "1", "a/b", "1/0"} {
		if _, _, err := parseShard(bad); err == nil {
			t.Errorf("--shard %s accepted", bad)
		}
	}

	re := regexp.MustCompile(focusRegexp([]string{configMap, limits}))
	for text, want := range map[string]bool{
		"Kubernetes e2e suite " + configMap:                                   true,
		"Kubernetes e2e suite " + limits:                                      true,
		"Kubernetes e2e suite " + hostIP:                                      false,
		"Kubernetes e2e suite " + configMap + " with a longer name":           false,
		"Kubernetes e2e suite [sig-x] Prefix" + configMap[len("[sig-node]"):]: false,
	} {
		if re.MatchString(text) != want {
			t.Errorf("focus on %q: %v, want %v", text, !want, want)
		}
	}

	if _, err := restrict(conf, []string{configMap, "[sig-node] no such test [Conformance]"}); err == nil {
		t.Error("a list naming an unknown test was accepted")
	}

	dir := t.TempDir()
	list := filepath.Join(dir, "list.txt")
	if err := os.WriteFile(list, []byte("# CI\n"+configMap+"\n\n"+limits+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"select", "--conformance", "testdata/conformance.yaml", "--list", list, "--serial=false"}, &out, &errOut); code != 0 {
		t.Fatalf("select: %d %s", code, errOut.String())
	}
	if got := strings.TrimSpace(out.String()); got != focusRegexp([]string{configMap}) {
		t.Errorf("parallel focus %q, want only the non-serial listed test", got)
	}
	out.Reset()
	if code := run([]string{"select", "--conformance", "testdata/conformance.yaml", "--list", list, "--serial=true"}, &out, &errOut); code != 0 {
		t.Fatalf("select: %d %s", code, errOut.String())
	}
	if got := strings.TrimSpace(out.String()); got != focusRegexp([]string{limits}) {
		t.Errorf("serial focus %q, want only the serial listed test", got)
	}
}

func TestMergeCommandWritesResultsAndDoc(t *testing.T) {
	dir := t.TempDir()
	results := filepath.Join(dir, "results.tsv")
	doc := filepath.Join(dir, "doc.md")
	if err := os.WriteFile(results, fixture(t, "previous.tsv"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(doc, fixture(t, "doc.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := run([]string{"merge", "--conformance", "testdata/conformance.yaml", "--results", results,
		"--blocked", "testdata/blocked.txt", "--doc", doc, "--run", "2026-12-03", "--command", "hack/conformance.sh",
		"testdata/shard1.xml", "testdata/shard2.xml"}, &out, &errOut)
	if code != 1 {
		t.Errorf("exit %d (%s), want 1: a test failed", code, errOut.String())
	}
	printed := out.String()
	if !strings.HasPrefix(printed, "newly failing (2, passed in the previous results):\n  "+cronJob+"\n  "+hostIP+"\n") {
		t.Errorf("output should name the newly failing tests first:\n%s", printed)
	}
	if !strings.Contains(printed, "this run: 7 tests: 2 passed, 1 failed, 2 blocked, 1 skipped, 1 not-run") {
		t.Errorf("output lacks this run's counts:\n%s", printed)
	}
	rs, err := readResultsFile(results)
	if err != nil || len(rs) != 7 {
		t.Fatalf("results: %v %d lines", err, len(rs))
	}
	d, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(d)
	if strings.Contains(text, "old table") || !strings.HasPrefix(text, "# Doc\n\nBefore.\n") || !strings.HasSuffix(text, docEnd+"\n\nAfter.\n") {
		t.Errorf("doc section not replaced in place:\n%s", text)
	}
	if !strings.Contains(text, "| "+strings.ReplaceAll(hostIP, "|", `\|`)+" | failed | 300.1 | 2026-12-03 | Timed out after 300.000s. |") {
		t.Errorf("doc lacks hostIP's row:\n%s", text)
	}

	// A set-up failure is printed first, and fails the command.
	out.Reset()
	code = run([]string{"merge", "--conformance", "testdata/conformance.yaml", "--results", results, "--fresh",
		"testdata/setup-failed.xml"}, &out, &errOut)
	if code != 1 || !strings.HasPrefix(out.String(), `SUITE SET-UP FAILED, no test ran: [SynchronizedBeforeSuite]: Failed to get kubernetes service ClusterIP: services "kubernetes" not found`+"\nthis run:") {
		t.Errorf("set-up failure: exit %d, output:\n%s", code, out.String())
	}
}

func TestListPrintsNamesAndSplitsSerial(t *testing.T) {
	for flag, want := range map[string]string{
		"":               strings.Join([]string{cronJob, dns, protocols, configMap, hostIP, limits, secrets}, "\n"),
		"--serial=true":  limits,
		"--serial=false": strings.Join([]string{cronJob, dns, protocols, configMap, hostIP, secrets}, "\n"),
	} {
		args := []string{"list", "--conformance", "testdata/conformance.yaml"}
		if flag != "" {
			args = append(args, flag)
		}
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != 0 {
			t.Fatalf("list %s: exit %d: %s", flag, code, errOut.String())
		}
		if got := strings.TrimSpace(out.String()); got != want {
			t.Errorf("list %s:\n%s\nwant:\n%s", flag, got, want)
		}
	}
}

func TestMergeRecordsTheHarnessSetupFailure(t *testing.T) {
	results := filepath.Join(t.TempDir(), "results.tsv")
	var out, errOut bytes.Buffer
	code := run([]string{"merge", "--conformance", "testdata/conformance.yaml", "--results", results,
		"--setup-failure", "namespace x got no kube-root-ca.crt in 30 s"}, &out, &errOut)
	if code != 1 || !strings.HasPrefix(out.String(), "SUITE SET-UP FAILED, no test ran: [harness pre-flight]: namespace x got no kube-root-ca.crt in 30 s\n") {
		t.Errorf("exit %d (%s), output:\n%s", code, errOut.String(), out.String())
	}
	rs, err := readResultsFile(results)
	if err != nil || len(rs) != 7 || rs[0].Status != StatusNotRun || !strings.Contains(rs[0].Detail, "kube-root-ca.crt") {
		t.Errorf("results %v %+v, want every test not-run saying why", err, rs)
	}
}

func TestMissingKindNeedsDiscoveryForNamedNotFounds(t *testing.T) {
	served := map[string]bool{"pods": true, "services": true, "replicasets.apps": true}
	for text, want := range map[string]bool{
		`Error getting daemonsets in namespace: 'kube-system': daemonsets.apps "" not found`: true,
		`Failed to get kubernetes service ClusterIP: services "kubernetes" not found`:        false,
		`pods "pod-1" not found`: false,
		`the server does not allow this method on the requested resource (post replicasets.apps)`:               true,
		`failed to create deployment: the server could not find the requested resource (post deployments.apps)`: true,
		`Timed out after 300s: expected pod to be running`:                                                      false,
	} {
		if got := missingKind(text, served) != ""; got != want {
			t.Errorf("%q: blocked %v, want %v (%q)", text, got, want, missingKind(text, served))
		}
	}
	// Without discovery only the generic messages count.
	if why := missingKind(`daemonsets.apps "" not found`, nil); why != "" {
		t.Errorf("named NotFound without discovery: %q, want not blocked", why)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "api-resources.txt")
	if err := os.WriteFile(path, []byte("pods\nservices\nreplicasets.apps\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readDiscoveryFile(path)
	if err != nil || len(got) != 3 || !got["replicasets.apps"] {
		t.Errorf("discovery file: %v %v", got, err)
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readDiscoveryFile(path); err == nil {
		t.Error("an empty discovery file was accepted")
	}
}

// TestMergeRequireFailsUnlessEveryListedTestPassed: with --require, a listed
// test that this run skipped, blocked or did not run fails the command as a
// failure would, and the verdict over the list is printed last.
func TestMergeRequireFailsUnlessEveryListedTestPassed(t *testing.T) {
	dir := t.TempDir()
	results := filepath.Join(dir, "results.tsv")
	write := func(name string, lines ...string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("# a list\n\n"+strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	merge := func(require string) (int, string) {
		var out, errOut bytes.Buffer
		code := run([]string{"merge", "--conformance", "testdata/conformance.yaml", "--results", results, "--fresh",
			"--require", require, "testdata/shard2.xml"}, &out, &errOut)
		return code, out.String() + errOut.String()
	}
	// shard2 passes limits, skips protocols (configMap was not selected), fails nothing.
	if code, out := merge(write("passing.txt", limits)); code != 0 || !strings.HasSuffix(out, "\nconformance: 1 passed, 0 failed\n") {
		t.Errorf("every listed test passed: exit %d, output:\n%s", code, out)
	}
	code, out := merge(write("some.txt", limits, protocols, secrets))
	if code != 1 || !strings.HasSuffix(out, "\nconformance: 1 passed, 2 failed\n") {
		t.Errorf("a skipped and a not-run listed test: exit %d, want 1, output:\n%s", code, out)
	}
	for _, want := range []string{"required tests that did not pass (2):\n", "  skipped: " + protocols + "\n", "  not-run: " + secrets + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code, out := merge(write("typo.txt", "[sig-node] no such test [Conformance]")); code != 2 || !strings.Contains(out, "not conformance tests") {
		t.Errorf("an unknown name: exit %d, want 2, output:\n%s", code, out)
	}
	if code, out := merge(write("empty.txt")); code != 2 || !strings.Contains(out, "names no test") {
		t.Errorf("an empty list: exit %d, want 2, output:\n%s", code, out)
	}
}

// Failures that name a resource the test needed are blocked only while
// discovery lacks it.
func TestMissingKindFromTheFailureText(t *testing.T) {
	served := map[string]bool{"pods": true, "resourceclaims.resource.k8s.io": true}
	for text, blocked := range map[string]bool{
		"failed to create CRD: context deadline exceeded":                                    true,
		"API for resource.k8s.io/v1 does not include entry for resourceclaimtemplates, got:": true,
		"API for resource.k8s.io/v1 does not include entry for resourceclaims, got:":         false,
		"the server does not allow this method on the requested resource":                    true,
		"Timed out after 300.001s.":                                                          false,
	} {
		if got := missingKind(text, served) != ""; got != blocked {
			t.Errorf("%q: blocked %v, want %v", text, got, blocked)
		}
	}
	served["customresourcedefinitions.apiextensions.k8s.io"] = true
	if why := missingKind("failed to create CRD: context deadline exceeded", served); why != "" {
		t.Errorf("a CRD failure once CRDs are served: %q, want a failure (berth's to fix)", why)
	}
}
