package podsecurity

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	psconfig "k8s.io/pod-security-admission/admission/api"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDefaultConfiguration(t *testing.T) {
	got, err := LoadConfiguration("")
	if err != nil {
		t.Fatal(err)
	}
	want := psconfig.PodSecurityConfiguration{
		Defaults: psconfig.PodSecurityDefaults{
			Enforce: "baseline", EnforceVersion: "latest",
			Audit: "restricted", AuditVersion: "latest",
			Warn: "restricted", WarnVersion: "latest",
		},
		Exemptions: psconfig.PodSecurityExemptions{Namespaces: []string{"kube-system"}},
	}
	got.TypeMeta = want.TypeMeta
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("default configuration\n got %+v\nwant %+v", *got, want)
	}
}

const embedded = `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults:
      enforce: restricted
      enforce-version: v1.30
    exemptions:
      usernames: [ops]
      runtimeClasses: [kata]
      namespaces: [infra]
`

func TestLoadEmbeddedConfiguration(t *testing.T) {
	got, err := LoadConfiguration(writeFile(t, t.TempDir(), "admission.yaml", embedded))
	if err != nil {
		t.Fatal(err)
	}
	// Fields the file leaves out default as upstream's (privileged, latest).
	want := psconfig.PodSecurityDefaults{Enforce: "restricted", EnforceVersion: "v1.30",
		Audit: "privileged", AuditVersion: "latest", Warn: "privileged", WarnVersion: "latest"}
	if got.Defaults != want {
		t.Errorf("defaults\n got %+v\nwant %+v", got.Defaults, want)
	}
	ex := got.Exemptions
	if !reflect.DeepEqual(ex.Usernames, []string{"ops"}) || !reflect.DeepEqual(ex.RuntimeClasses, []string{"kata"}) || !reflect.DeepEqual(ex.Namespaces, []string{"infra"}) {
		t.Errorf("exemptions %+v", ex)
	}
}

func TestLoadConfigurationFromRelativePath(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "podsecurity.yaml", `apiVersion: pod-security.admission.config.k8s.io/v1beta1
kind: PodSecurityConfiguration
defaults:
  enforce: restricted
`)
	path := writeFile(t, dir, "admission.yaml", `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  path: podsecurity.yaml
`)
	got, err := LoadConfiguration(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Defaults.Enforce != "restricted" {
		t.Errorf("enforce %q, want restricted", got.Defaults.Enforce)
	}
}

func TestFileWithoutPodSecurityKeepsBerthDefault(t *testing.T) {
	got, err := LoadConfiguration(writeFile(t, t.TempDir(), "admission.yaml", "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Defaults, Default().Defaults) {
		t.Errorf("defaults %+v, want berth's %+v", got.Defaults, Default().Defaults)
	}
}

// A bad file is one error naming the flag, the file and what is wrong.
func TestBadConfigurationIsOneClearError(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct{ content, want string }{
		"not yaml":     {"{{{", "couldn't get version/kind"},
		"not a config": {"apiVersion: v1\nkind: Pod\n", "no kind \"Pod\" is registered"},
		"unknown level": {strings.Replace(embedded, "enforce: restricted", "enforce: strictest", 1),
			`defaults.enforce: Invalid value: "strictest"`},
		"bad version":   {strings.Replace(embedded, "v1.30", "v1.x", 1), `defaults.enforce-version: Invalid value: "v1.x"`},
		"unknown field": {strings.Replace(embedded, "      usernames:", "      users:", 1), `strict decoding error: unknown field "exemptions.users"`},
		"other plugin": {"apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: EventRateLimit\n  path: erl.yaml\n",
			`plugins[0]: berth has no configurable admission plugin "EventRateLimit"`},
		"missing plugin file": {"apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodSecurity\n  path: missing.yaml\n",
			"plugins[0] (PodSecurity): open " + filepath.Join(dir, "missing.yaml")},
		"twice": {embedded + "- name: PodSecurity\n", "plugins[1]: PodSecurity is configured twice"},
	} {
		t.Run(name, func(t *testing.T) {
			path := writeFile(t, dir, strings.ReplaceAll(name, " ", "-")+".yaml", tc.content)
			_, err := LoadConfiguration(path)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "--admission-control-config-file "+path+": ") || !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line naming the flag and the file, containing %q", msg, tc.want)
			}
		})
	}
	if _, err := LoadConfiguration(filepath.Join(dir, "absent.yaml")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("absent file: %v", err)
	}
}
