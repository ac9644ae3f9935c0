package main

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Status is a test's result in the results file.
type Status string

// The statuses, in the order the summary prints them.
const (
	StatusPassed  Status = "passed"
	StatusFailed  Status = "failed"
	StatusBlocked Status = "blocked" // failed on a kind berth does not serve, or listed in conformance-blocked.txt (failed or passed)
	StatusSkipped Status = "skipped" // it skipped itself while running (e.g. a provider check)
	StatusNotRun  Status = "not-run" // this run did not run it (not selected, or the suite set-up failed)
)

var statusOrder = []Status{StatusPassed, StatusFailed, StatusBlocked, StatusSkipped, StatusNotRun}

// Result is one line of the results file.
type Result struct {
	Name     string
	Status   Status
	Duration time.Duration
	Run      string // which run produced this line
	Detail   string // the first failure line, the blocked reason or the skip message
}

// CaseResult is one spec's outcome in a JUnit file.
type CaseResult struct {
	Name      string
	State     string // Ginkgo's spec state: passed, failed, skipped, pending, timedout, ...
	Duration  time.Duration
	FirstLine string // first line of the failure or skip text
	Text      string // the whole failure text, for classification
}

// SuiteFailure is a failed suite node ([SynchronizedBeforeSuite], ...).
type SuiteFailure struct {
	Node      string
	FirstLine string
}

// Run is what one or several JUnit files report.
type Run struct {
	Cases         map[string]CaseResult
	SuiteFailures []SuiteFailure
}

type junitSuites struct {
	Suites []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Cases []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name    string        `xml:"name,attr"`
	Status  string        `xml:"status,attr"`
	Time    float64       `xml:"time,attr"`
	Failure *junitMessage `xml:"failure"`
	Error   *junitMessage `xml:"error"`
	Skipped *junitMessage `xml:"skipped"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// leafRE splits Ginkgo's "[It] full text" into the node type and the text.
var leafRE = regexp.MustCompile(`^\[([A-Za-z]+)\]\s*(.*)$`)

// suiteNodes are the node types that run once for the suite, not per spec.
var suiteNodes = map[string]bool{
	"BeforeSuite": true, "SynchronizedBeforeSuite": true, "AfterSuite": true,
	"SynchronizedAfterSuite": true, "ReportBeforeSuite": true, "ReportAfterSuite": true,
	"DeferCleanup (Suite)": true,
}

// ParseJUnit reads a Ginkgo v2 JUnit report (the root may be <testsuites>
// or a single <testsuite>).
func ParseJUnit(data []byte) (Run, error) {
	var suites junitSuites
	if err := xml.Unmarshal(data, &suites); err != nil {
		return Run{}, err
	}
	if len(suites.Suites) == 0 {
		var one junitSuite
		if err := xml.Unmarshal(data, &one); err == nil && len(one.Cases) > 0 {
			suites.Suites = []junitSuite{one}
		}
	}
	r := Run{Cases: map[string]CaseResult{}}
	for _, s := range suites.Suites {
		for _, c := range s.Cases {
			node, text := "It", c.Name
			if m := leafRE.FindStringSubmatch(c.Name); m != nil {
				node, text = m[1], m[2]
			}
			state := c.Status
			if state == "" {
				switch {
				case c.Failure != nil || c.Error != nil:
					state = "failed"
				case c.Skipped != nil:
					state = "skipped"
				default:
					state = "passed"
				}
			}
			msg := c.Failure
			if msg == nil {
				msg = c.Error
			}
			if msg == nil && state == "skipped" {
				msg = c.Skipped
			}
			full := ""
			if msg != nil {
				full = strings.TrimSpace(msg.Message + "\n" + msg.Text)
			}
			// Ginkgo writes a spec its filters left out (focus, skip, labels)
			// as skipped with the bare message "skipped"; a spec that skipped
			// itself while running says why after "skipped - ".
			if state == "skipped" && c.Skipped != nil && strings.TrimSpace(c.Skipped.Message) == "skipped" && strings.TrimSpace(c.Skipped.Text) == "" {
				continue
			}
			if suiteNodes[node] || (text == "" && node != "It") {
				f := SuiteFailure{Node: "[" + node + "]", FirstLine: firstLine(full)}
				if isFailure(state) && !slices.Contains(r.SuiteFailures, f) {
					r.SuiteFailures = append(r.SuiteFailures, f)
				}
				continue
			}
			r.Cases[normalize(text)] = CaseResult{
				Name:      text,
				State:     state,
				Duration:  time.Duration(c.Time * float64(time.Second)),
				FirstLine: firstLine(full),
				Text:      full,
			}
		}
	}
	return r, nil
}

func readJUnitFile(path string) (Run, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Run{}, err
	}
	r, err := ParseJUnit(data)
	if err != nil {
		return Run{}, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

func isFailure(state string) bool {
	switch state {
	case "passed", "skipped", "pending":
		return false
	}
	return true
}

// firstLine is the first non-empty line of a failure text, without Ginkgo's
// "[FAILED] " marker.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		l = strings.TrimPrefix(l, "[FAILED] ")
		l = strings.TrimPrefix(l, "[PANICKED] ")
		l = strings.TrimPrefix(l, "[TIMEDOUT] ")
		if l != "" {
			return l
		}
	}
	return ""
}

// normalize collapses runs of white space, so names from YAML (folded lines)
// and from JUnit compare equal.
func normalize(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Merge combines runs (shards, the parallel and the [Serial] pass, a
// re-run): a spec reported by several keeps the first non-skipped outcome
// after the last one that ran, that is, a later run that ran the spec wins
// over an earlier one, and any run that ran it wins over one that skipped it.
func Merge(runs []Run) Run {
	out := Run{Cases: map[string]CaseResult{}}
	for _, r := range runs {
		for _, f := range r.SuiteFailures {
			if !slices.Contains(out.SuiteFailures, f) {
				out.SuiteFailures = append(out.SuiteFailures, f)
			}
		}
		for k, c := range r.Cases {
			if prev, ok := out.Cases[k]; ok && prev.State != "skipped" && c.State == "skipped" {
				continue
			}
			out.Cases[k] = c
		}
	}
	return out
}

// BlockedEntry is a line of conformance-blocked.txt.
type BlockedEntry struct {
	Capability string
	Reason     string
}

// readBlockedFile reads "test name | capability | why" lines (# comments).
func readBlockedFile(path string) (map[string]BlockedEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseBlocked(f, path)
}

func parseBlocked(f io.Reader, path string) (map[string]BlockedEntry, error) {
	out := map[string]BlockedEntry{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.Split(line, " | ")
		if len(parts) != 3 || strings.TrimSpace(parts[1]) == "" || strings.TrimSpace(parts[2]) == "" {
			return nil, fmt.Errorf("%s:%d: want \"test name | capability | why\"", path, n)
		}
		out[normalize(parts[0])] = BlockedEntry{Capability: strings.TrimSpace(parts[1]), Reason: strings.TrimSpace(parts[2])}
	}
	return out, sc.Err()
}

// missingKindRE matches what client-go and kubectl say when a request went
// to a resource the server does not serve: a 404 without a Status naming an
// object, a 405 for a verb the resource does not offer, or a REST mapping
// that found no such kind.
var missingKindRE = regexp.MustCompile(`the server could not find the requested resource|` +
	`the server does not allow this method on the requested resource|` +
	`no matches for kind|` +
	`the server doesn't have a resource type`)

// notFoundRE matches a NotFound naming its resource: `daemonsets.apps "" not
// found`, `services "kubernetes" not found`.
var notFoundRE = regexp.MustCompile(`\b([a-z0-9-]+(?:\.[a-z0-9-]+)*) "[^"]*" not found`)

// missingKind says why a failure text shows a resource missing from
// discovery, or "" if it does not. served holds discovery's resource names
// as `kubectl api-resources -o name` prints them (nil: unknown, and only
// the generic messages count).
func missingKind(text string, served map[string]bool) string {
	if m := missingKindRE.FindString(text); m != "" {
		return "missing from discovery (" + m + ")"
	}
	if served == nil {
		return ""
	}
	for _, m := range notFoundRE.FindAllStringSubmatch(text, -1) {
		if res := m[1]; !served[res] {
			return "missing from discovery (" + res + " is not served: " + m[0] + ")"
		}
	}
	for _, n := range needs {
		if m := n.re.FindStringSubmatch(text); m != nil {
			if res := n.resource(m); !served[res] {
				return "missing from discovery (" + res + " is not served: " + m[0] + ")"
			}
		}
	}
	return ""
}

// needs are failure texts that name the resource a test could not do
// without; the failure is blocked only while discovery lacks it.
var needs = []struct {
	re       *regexp.Regexp
	resource func(match []string) string
}{
	// The CRD tests' own helpers time out creating one, or find no group.
	{regexp.MustCompile(`failed to create CRD|apiextensions\.k8s\.io API group not found`),
		func([]string) string { return "customresourcedefinitions.apiextensions.k8s.io" }},
	// The API-operations tests read their group's discovery document first.
	{regexp.MustCompile(`API for ([a-z0-9.-]+)/[a-z0-9]+ does not include entry for ([a-z]+)`),
		func(m []string) string { return m[2] + "." + m[1] }},
}

// Classify gives each conformance test its result from the merged run.
func Classify(conformance []string, run Run, blocked map[string]BlockedEntry, served map[string]bool, runID string) []Result {
	out := make([]Result, 0, len(conformance))
	for _, name := range conformance {
		key := normalize(name)
		c, ok := run.Cases[key]
		r := Result{Name: key, Run: runID}
		switch {
		case !ok:
			r.Status = StatusNotRun
			if len(run.SuiteFailures) > 0 {
				r.Detail = "suite set-up failed: " + run.SuiteFailures[0].FirstLine
			}
		case c.State == "passed":
			r.Status, r.Duration = StatusPassed, c.Duration
			if b, listed := blocked[key]; listed {
				// Some upstream tests return, as passed, when they cannot set
				// up what they test (the webhook tests without CRDs): the list
				// names them, and such a pass counts for nothing.
				r.Status, r.Detail = StatusBlocked, b.Capability+": "+b.Reason+" (reported passed without testing it)"
			}
		case c.State == "skipped" || c.State == "pending":
			r.Status, r.Detail = StatusSkipped, c.FirstLine
		default:
			r.Status, r.Duration, r.Detail = StatusFailed, c.Duration, c.FirstLine
			if b, listed := blocked[key]; listed {
				r.Status, r.Detail = StatusBlocked, b.Capability+": "+b.Reason+" (failed: "+c.FirstLine+")"
			} else if why := missingKind(c.Text, served); why != "" {
				r.Status = StatusBlocked
				r.Detail = why + ": " + c.FirstLine
			}
		}
		if !ok {
			r.Run = ""
		}
		out = append(out, r)
	}
	return out
}

// readDiscoveryFile reads `kubectl api-resources -o name` output.
func readDiscoveryFile(path string) (map[string]bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	served := map[string]bool{}
	for _, l := range strings.Fields(string(data)) {
		served[l] = true
	}
	if len(served) == 0 {
		return nil, fmt.Errorf("%s: no resources", path)
	}
	return served, nil
}

// CarryOver keeps the previous line of every test this run did not report.
func CarryOver(now, previous []Result) []Result {
	prev := map[string]Result{}
	for _, r := range previous {
		prev[r.Name] = r
	}
	out := make([]Result, len(now))
	for i, r := range now {
		if p, ok := prev[r.Name]; ok && r.Status == StatusNotRun && p.Status != StatusNotRun {
			r = p
		}
		out[i] = r
	}
	return out
}

// Comparison names what changed between the previous results and this run.
type Comparison struct {
	NewlyFailing []string // passed before, failed or blocked now
	NewlyPassing []string // ran before without passing, passed now
}

// Compare looks only at tests this run reported.
func Compare(previous, now []Result) Comparison {
	prev := map[string]Status{}
	for _, r := range previous {
		prev[r.Name] = r.Status
	}
	var c Comparison
	for _, r := range now {
		p, ok := prev[r.Name]
		if !ok {
			continue
		}
		switch {
		case p == StatusPassed && (r.Status == StatusFailed || r.Status == StatusBlocked):
			c.NewlyFailing = append(c.NewlyFailing, r.Name)
		case r.Status == StatusPassed && (p == StatusFailed || p == StatusBlocked):
			c.NewlyPassing = append(c.NewlyPassing, r.Name)
		}
	}
	sort.Strings(c.NewlyFailing)
	sort.Strings(c.NewlyPassing)
	return c
}

// Summary counts results by status.
type Summary struct {
	Total  int
	Counts map[Status]int
}

// Summarize counts rs.
func Summarize(rs []Result) Summary {
	s := Summary{Total: len(rs), Counts: map[Status]int{}}
	for _, r := range rs {
		s.Counts[r.Status]++
	}
	return s
}

func (s Summary) String() string {
	parts := make([]string, 0, len(statusOrder))
	for _, st := range statusOrder {
		parts = append(parts, fmt.Sprintf("%d %s", s.Counts[st], st))
	}
	return fmt.Sprintf("%d tests: %s", s.Total, strings.Join(parts, ", "))
}

const resultsHeader = "# berth Kubernetes conformance results (hack/conformance.sh, hack/tools/conformance-report)\n" +
	"# name\tstatus\tseconds\trun\tfirst failure line / reason\n"

// writeResultsFile writes one tab-separated line per test.
func writeResultsFile(path string, rs []Result) error {
	var b strings.Builder
	b.WriteString(resultsHeader)
	for _, r := range rs {
		fmt.Fprintf(&b, "%s\t%s\t%.1f\t%s\t%s\n", r.Name, r.Status, r.Duration.Seconds(), r.Run, oneLine(r.Detail))
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// readResultsFile reads a results file; a missing file is no results.
func readResultsFile(path string) ([]Result, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseResults(string(data), path)
}

func parseResults(data, path string) ([]Result, error) {
	var out []Result
	for n, line := range strings.Split(data, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.SplitN(line, "\t", 5)
		if len(f) != 5 {
			return nil, fmt.Errorf("%s:%d: want 5 tab-separated fields, got %d", path, n+1, len(f))
		}
		secs, err := strconv.ParseFloat(f[2], 64)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: seconds: %w", path, n+1, err)
		}
		st := Status(f[1])
		known := false
		for _, s := range statusOrder {
			known = known || s == st
		}
		if !known {
			return nil, fmt.Errorf("%s:%d: unknown status %q", path, n+1, f[1])
		}
		out = append(out, Result{Name: f[0], Status: st, Duration: time.Duration(secs * float64(time.Second)), Run: f[3], Detail: f[4]})
	}
	return out, nil
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// ConformanceTest is an entry of `e2e.test --list-conformance-tests`.
type ConformanceTest struct {
	Testname string `json:"testname"`
	Codename string `json:"codename"`
}

// ParseConformanceList returns the codenames (the Ginkgo full texts) of the
// list, sorted.
func ParseConformanceList(data []byte) ([]string, error) {
	var tests []ConformanceTest
	if err := yaml.Unmarshal(data, &tests); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(tests))
	seen := map[string]bool{}
	for _, t := range tests {
		n := normalize(t.Codename)
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no conformance tests in the list")
	}
	sort.Strings(out)
	return out, nil
}

func readConformanceFile(path string) ([]string, error) {
	if path == "" {
		return nil, fmt.Errorf("--conformance is required (e2e.test --list-conformance-tests > FILE)")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	names, err := ParseConformanceList(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return names, nil
}

// readListFile reads test names, one a line, # comments and blank lines ignored.
func readListFile(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		out = append(out, normalize(l))
	}
	return out, nil
}

// restrict keeps the conformance tests named in list, and fails on a name
// that is not a conformance test (a typo would otherwise select nothing).
func restrict(conformance, list []string) ([]string, error) {
	known := map[string]bool{}
	for _, n := range conformance {
		known[n] = true
	}
	var unknown []string
	want := map[string]bool{}
	for _, n := range list {
		if !known[n] {
			unknown = append(unknown, n)
		}
		want[n] = true
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("not conformance tests of this e2e.test: %q", unknown)
	}
	var out []string
	for _, n := range conformance {
		if want[n] {
			out = append(out, n)
		}
	}
	return out, nil
}

func parseShard(s string) (int, int, error) {
	a, b, ok := strings.Cut(s, "/")
	n, err1 := strconv.Atoi(a)
	m, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || m < 1 || n < 1 || n > m {
		return 0, 0, fmt.Errorf("--shard %q: want N/M with 1 <= N <= M", s)
	}
	return n, m, nil
}

// shard deals names round-robin into m shards and returns the nth (1-based):
// every test lands in exactly one shard, and shards differ in size by at
// most one.
func shard(names []string, n, m int) []string {
	var out []string
	for i, name := range names {
		if i%m == n-1 {
			out = append(out, name)
		}
	}
	return out
}

func isSerial(name string) bool { return strings.Contains(name, "[Serial]") }

// focusRegexp matches exactly the given full texts: Ginkgo matches its focus
// against "<suite description> <spec text>", so each name must follow white
// space (or start the text) and end it.
func focusRegexp(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	return `(?:^|\s)(?:` + strings.Join(quoted, "|") + `)$`
}
