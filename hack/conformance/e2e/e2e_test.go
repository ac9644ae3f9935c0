//go:build conformance

// Package e2e is the upstream Kubernetes end-to-end suite (k8s.io/kubernetes
// test/e2e at the version berth's go.mod requires), compiled inside berth's
// module with `go test -c` by hack/build-conformance.sh into
// _output/conformance/e2e.test. It mirrors upstream's test/e2e/e2e_test.go:
// the same suites, the same flags, --list-conformance-tests and --version.
// The conformance build tag keeps it out of `go test ./...`, `go vet ./...`
// and staticcheck: it would try to reach a cluster, and compiling upstream's
// whole e2e tree would cost every lint and unit run minutes; `go mod tidy`
// reads every build tag, so its modules stay in go.mod.
package e2e

import (
	"flag"
	"fmt"
	"os"
	"testing"

	// The ginkgo CLI looks for this import to recognise a Ginkgo suite.
	_ "github.com/onsi/ginkgo/v2"
	yaml "go.yaml.in/yaml/v2"

	"k8s.io/component-base/version"
	conformancetestdata "k8s.io/kubernetes/test/conformance/testdata"
	upstreame2e "k8s.io/kubernetes/test/e2e"
	"k8s.io/kubernetes/test/e2e/framework"
	"k8s.io/kubernetes/test/e2e/framework/config"
	"k8s.io/kubernetes/test/e2e/framework/testfiles"
	e2etestingmanifests "k8s.io/kubernetes/test/e2e/testing-manifests"
	testfixtures "k8s.io/kubernetes/test/fixtures"

	// Constants frozen before the suites register.
	_ "k8s.io/kubernetes/test/e2e/feature"

	// The suites, as upstream's e2e_test.go lists them.
	_ "k8s.io/kubernetes/test/e2e/apimachinery"
	_ "k8s.io/kubernetes/test/e2e/apps"
	_ "k8s.io/kubernetes/test/e2e/architecture"
	_ "k8s.io/kubernetes/test/e2e/auth"
	_ "k8s.io/kubernetes/test/e2e/autoscaling"
	_ "k8s.io/kubernetes/test/e2e/common"
	_ "k8s.io/kubernetes/test/e2e/dra"
	_ "k8s.io/kubernetes/test/e2e/instrumentation"
	_ "k8s.io/kubernetes/test/e2e/invariants"
	"k8s.io/kubernetes/test/e2e/invariants/logcheck"
	_ "k8s.io/kubernetes/test/e2e/kubectl"
	_ "k8s.io/kubernetes/test/e2e/network"
	_ "k8s.io/kubernetes/test/e2e/node"
	_ "k8s.io/kubernetes/test/e2e/scheduling"
	_ "k8s.io/kubernetes/test/e2e/storage"
	_ "k8s.io/kubernetes/test/e2e/storage/csimock"
	_ "k8s.io/kubernetes/test/e2e/storage/external"
	_ "k8s.io/kubernetes/test/e2e/windows"

	// Framework reconfiguration, as upstream.
	_ "k8s.io/kubernetes/test/e2e/framework/debug/init"
	_ "k8s.io/kubernetes/test/e2e/framework/metrics/init"
	_ "k8s.io/kubernetes/test/e2e/framework/node/init"
	_ "k8s.io/kubernetes/test/utils/ktesting/format"
)

// handleFlags registers upstream's flags and parses the command line.
func handleFlags() {
	config.CopyFlags(config.Flags, flag.CommandLine)
	framework.RegisterCommonFlags(flag.CommandLine)
	framework.RegisterClusterFlags(flag.CommandLine)
	logcheck.RegisterFlags(flag.CommandLine)
	flag.Parse()
}

func TestMain(m *testing.M) {
	var versionFlag bool
	flag.CommandLine.BoolVar(&versionFlag, "version", false, "Displays version information.")
	listConformanceTests := flag.CommandLine.Bool("list-conformance-tests", false, "If true, will show list of conformance tests.")
	handleFlags()

	if versionFlag {
		fmt.Printf("%s\n", version.Get())
		os.Exit(0)
	}
	if flag.CommandLine.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unknown additional command line arguments: %s", flag.CommandLine.Args())
		os.Exit(1)
	}

	// Embedded manifests and fixtures, as upstream.
	testfiles.AddFileSource(e2etestingmanifests.GetE2ETestingManifestsFS())
	testfiles.AddFileSource(testfixtures.GetTestFixturesFS())
	testfiles.AddFileSource(conformancetestdata.GetConformanceTestdataFS())

	if *listConformanceTests {
		if err := listConformance(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}

	framework.AfterReadingAllFlags(&framework.TestContext)
	if framework.TestContext.RepoRoot != "" {
		testfiles.AddFileSource(testfiles.RootFileSource{Root: framework.TestContext.RepoRoot})
	}
	os.Exit(m.Run())
}

// listConformance prints upstream's conformance.yaml entries as YAML.
func listConformance() error {
	var tests []struct {
		Testname    string `yaml:"testname"`
		Codename    string `yaml:"codename"`
		Description string `yaml:"description"`
		Release     string `yaml:"release"`
		File        string `yaml:"file"`
	}
	data, err := testfiles.Read("test/conformance/testdata/conformance.yaml")
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(data, &tests); err != nil {
		return err
	}
	return yaml.NewEncoder(os.Stdout).Encode(tests)
}

func TestE2E(t *testing.T) {
	upstreame2e.RunE2ETests(t)
}
