// Command conformance-report turns the JUnit files of Kubernetes conformance
// runs (e2e.test --report-dir) into berth's results file and the per-test
// table in docs/conformance.md, and picks the tests of a list or a shard.
//
//	conformance-report list --conformance LIST.yaml [--serial=BOOL]
//	    prints the tests' full names, one a line, sorted (with --serial, only
//	    the [Serial] ones or only the others).
//	conformance-report select --conformance LIST.yaml [--list FILE] [--shard N/M] --serial=BOOL
//	    prints a Ginkgo focus regexp matching exactly the selected tests of
//	    one pass ([Serial] or not); prints nothing if none is selected.
//	conformance-report merge --conformance LIST.yaml --results FILE [--blocked FILE] [--discovery FILE]
//	    [--doc FILE] [--run ID] [--command CMD] [--fresh] [--setup-failure TEXT] [--require FILE] JUNIT...
//	    merges the JUnit files (shards, passes) into FILE, one line per test of
//	    LIST.yaml; a test absent from these files keeps its line from FILE
//	    (unless --fresh). Prints the suite set-up failure if there was one,
//	    the tests that passed before and fail now first, then the counts;
//	    rewrites the generated section of --doc. --setup-failure records a
//	    set-up failure the harness found itself (its pre-flight), which kept
//	    e2e.test from running. Exits 1 if a test failed or the set-up failed.
//	    --require FILE (a --list file): every test it names must pass in this
//	    run; the ones that did not are named with their status (blocked,
//	    skipped and not-run count as failed), then `conformance: N passed,
//	    M failed` over them is printed last, and exits 1 unless M is 0.
//
// LIST.yaml is what `e2e.test --list-conformance-tests` prints.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: conformance-report list|select|merge [flags]")
		return 2
	}
	var err error
	code := 0
	switch args[0] {
	case "list":
		err = runList(args[1:], stdout)
	case "select":
		err = runSelect(args[1:], stdout)
	case "merge":
		code, err = runMerge(args[1:], stdout)
	default:
		err = fmt.Errorf("unknown command %q (list, select, merge)", args[0])
	}
	if err != nil {
		fmt.Fprintf(stderr, "conformance-report: %v\n", err)
		return 2
	}
	return code
}

func runList(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("list", flag.ContinueOnError)
	confFile := fs.String("conformance", "", "output of e2e.test --list-conformance-tests")
	var serial *bool
	fs.Func("serial", "true: only the [Serial] tests; false: only the others (default: all)", func(v string) error {
		b, err := strconv.ParseBool(v)
		serial = &b
		return err
	})
	if err := fs.Parse(args); err != nil {
		return err
	}
	conf, err := readConformanceFile(*confFile)
	if err != nil {
		return err
	}
	for _, name := range conf {
		if serial != nil && isSerial(name) != *serial {
			continue
		}
		if _, err := fmt.Fprintln(stdout, name); err != nil {
			return err
		}
	}
	return nil
}

func runSelect(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("select", flag.ContinueOnError)
	confFile := fs.String("conformance", "", "output of e2e.test --list-conformance-tests")
	listFile := fs.String("list", "", "file of test names, one a line (# comments)")
	shardFlag := fs.String("shard", "", "N/M: the Nth of M shards")
	serial := fs.Bool("serial", false, "select the [Serial] tests (else the others)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	conf, err := readConformanceFile(*confFile)
	if err != nil {
		return err
	}
	names := conf
	if *listFile != "" {
		list, err := readListFile(*listFile)
		if err != nil {
			return err
		}
		if names, err = restrict(conf, list); err != nil {
			return err
		}
	}
	if *shardFlag != "" {
		n, m, err := parseShard(*shardFlag)
		if err != nil {
			return err
		}
		names = shard(names, n, m)
	}
	var chosen []string
	for _, name := range names {
		if isSerial(name) == *serial {
			chosen = append(chosen, name)
		}
	}
	if len(chosen) == 0 {
		return nil
	}
	_, err = fmt.Fprintln(stdout, focusRegexp(chosen))
	return err
}

func runMerge(args []string, stdout io.Writer) (int, error) {
	fs := flag.NewFlagSet("merge", flag.ContinueOnError)
	confFile := fs.String("conformance", "", "output of e2e.test --list-conformance-tests")
	resultsFile := fs.String("results", "", "results file to read (previous) and write")
	blockedFile := fs.String("blocked", "", "hack/conformance-blocked.txt")
	discoveryFile := fs.String("discovery", "", "`kubectl api-resources -o name` of the cluster under test")
	docFile := fs.String("doc", "", "markdown file whose generated section gets the table")
	runID := fs.String("run", "", "what this run is called in the results (e.g. its date)")
	command := fs.String("command", "", "the command that produced this run, for the doc")
	fresh := fs.Bool("fresh", false, "forget the previous results of tests this run did not report")
	setupFailure := fs.String("setup-failure", "", "a set-up failure the harness found before e2e.test ran")
	requireFile := fs.String("require", "", "file of test names, one a line, that must all pass in this run")
	if err := fs.Parse(args); err != nil {
		return 0, err
	}
	if *resultsFile == "" {
		return 0, fmt.Errorf("merge: --results is required")
	}
	conf, err := readConformanceFile(*confFile)
	if err != nil {
		return 0, err
	}
	var required []string
	if *requireFile != "" {
		list, err := readListFile(*requireFile)
		if err != nil {
			return 0, err
		}
		if required, err = restrict(conf, list); err != nil {
			return 0, fmt.Errorf("--require %s: %w", *requireFile, err)
		}
		if len(required) == 0 {
			return 0, fmt.Errorf("--require %s names no test", *requireFile)
		}
	}
	var blocked map[string]BlockedEntry
	if *blockedFile != "" {
		if blocked, err = readBlockedFile(*blockedFile); err != nil {
			return 0, err
		}
	}
	var served map[string]bool
	if *discoveryFile != "" {
		if served, err = readDiscoveryFile(*discoveryFile); err != nil {
			return 0, err
		}
	}
	var runs []Run
	for _, f := range fs.Args() {
		r, err := readJUnitFile(f)
		if err != nil {
			return 0, err
		}
		runs = append(runs, r)
	}
	previous, err := readResultsFile(*resultsFile)
	if err != nil {
		return 0, err
	}
	if *setupFailure != "" {
		runs = append(runs, Run{SuiteFailures: []SuiteFailure{{Node: "[harness pre-flight]", FirstLine: *setupFailure}}})
	}
	merged := Merge(runs)
	results := Classify(conf, merged, blocked, served, *runID)
	carried := results
	if !*fresh {
		carried = CarryOver(results, previous)
	}
	cmp := Compare(previous, results)
	summary := Summarize(carried)

	var b strings.Builder
	for _, f := range merged.SuiteFailures {
		fmt.Fprintf(&b, "SUITE SET-UP FAILED, no test ran: %s: %s\n", f.Node, f.FirstLine)
	}
	if len(cmp.NewlyFailing) > 0 {
		fmt.Fprintf(&b, "newly failing (%d, passed in the previous results):\n", len(cmp.NewlyFailing))
		for _, n := range cmp.NewlyFailing {
			fmt.Fprintf(&b, "  %s\n", n)
		}
	}
	if len(cmp.NewlyPassing) > 0 {
		fmt.Fprintf(&b, "newly passing (%d)\n", len(cmp.NewlyPassing))
	}
	ran := Summarize(results)
	fmt.Fprintf(&b, "this run: %s\n", ran)
	fmt.Fprintf(&b, "results (%s): %s\n", *resultsFile, summary)
	notPassed := 0
	if *requireFile != "" {
		var text string
		text, notPassed = requireAll(required, results)
		b.WriteString(text)
	}
	if _, err := io.WriteString(stdout, b.String()); err != nil {
		return 0, err
	}
	if err := writeResultsFile(*resultsFile, carried); err != nil {
		return 0, err
	}
	if *docFile != "" {
		if err := rewriteDoc(*docFile, carried, merged.SuiteFailures, *command); err != nil {
			return 0, err
		}
	}
	if len(merged.SuiteFailures) > 0 || ran.Counts[StatusFailed] > 0 || notPassed > 0 {
		return 1, nil
	}
	return 0, nil
}

// requireAll names the required tests that did not pass in this run's
// results, with their status, then prints the verdict over all of them in
// the plain `N passed, M failed` form; it returns that text and M.
func requireAll(required []string, results []Result) (string, int) {
	status := map[string]Status{}
	for _, r := range results {
		status[r.Name] = r.Status
	}
	var b strings.Builder
	var missed []string
	for _, n := range required {
		if s := status[n]; s != StatusPassed {
			if s == "" {
				s = StatusNotRun
			}
			missed = append(missed, fmt.Sprintf("  %s: %s", s, n))
		}
	}
	if len(missed) > 0 {
		fmt.Fprintf(&b, "required tests that did not pass (%d):\n%s\n", len(missed), strings.Join(missed, "\n"))
	}
	fmt.Fprintf(&b, "conformance: %d passed, %d failed\n", len(required)-len(missed), len(missed))
	return b.String(), len(missed)
}
