package podsecurity

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	apiserverconfig "k8s.io/apiserver/pkg/apis/apiserver"
	apiserverinstall "k8s.io/apiserver/pkg/apis/apiserver/install"
	psconfig "k8s.io/pod-security-admission/admission/api"
	"k8s.io/pod-security-admission/admission/api/load"
	"k8s.io/pod-security-admission/admission/api/validation"
)

// defaultConfiguration is berth's policy when no file names one: stricter
// than kube-apiserver's (privileged everywhere). Pods must meet baseline,
// which keeps them off the host (no hostPath, host namespaces, privileged
// containers); restricted violations are warned about and audited.
// kube-system, where cluster add-ons run, is exempt. A namespace opts out
// with the label pod-security.kubernetes.io/enforce=privileged.
const defaultConfiguration = `apiVersion: pod-security.admission.config.k8s.io/v1
kind: PodSecurityConfiguration
defaults:
  enforce: baseline
  enforce-version: latest
  audit: restricted
  audit-version: latest
  warn: restricted
  warn-version: latest
exemptions:
  namespaces: [kube-system]
`

// Default is berth's built-in configuration (see defaultConfiguration).
func Default() *psconfig.PodSecurityConfiguration {
	cfg, err := load.LoadFromData([]byte(defaultConfiguration))
	if err != nil {
		panic(fmt.Sprintf("podsecurity: built-in configuration: %v", err)) // a constant: a bug if it fails
	}
	return cfg
}

// LoadConfiguration reads an admission configuration file, kube-apiserver's
// --admission-control-config-file (apiserver.config.k8s.io
// AdmissionConfiguration), and returns its PodSecurity plugin's
// configuration, embedded or in a file of its own (a relative path is
// relative to the file's directory). An empty path, or a file without a
// PodSecurity entry, gives Default(). A PodSecurity entry's own fields
// default as upstream's do (privileged). Any other plugin's entry is an
// error: berth runs no other configurable plugin, and ignoring its
// configuration would leave the cluster looser than its operator asked.
func LoadConfiguration(path string) (*psconfig.PodSecurityConfiguration, error) {
	if path == "" {
		return Default(), nil
	}
	data, err := pluginConfiguration(path)
	if err != nil {
		return nil, fmt.Errorf("--admission-control-config-file %s: %w", path, err)
	}
	if data == nil {
		return Default(), nil
	}
	cfg, err := load.LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("--admission-control-config-file %s: %s configuration: %w", path, PluginName, err)
	}
	if errs := validation.ValidatePodSecurityConfiguration(cfg); len(errs) > 0 {
		return nil, fmt.Errorf("--admission-control-config-file %s: %s configuration: %w", path, PluginName, errs.ToAggregate())
	}
	return cfg, nil
}

// pluginConfiguration is the PodSecurity entry's configuration, nil if the
// file has none. The file is decoded as k8s.io/apiserver's
// ReadAdmissionConfiguration does (strictly), but here: that function ends
// the process (klog.Fatalf) when an entry's path cannot be read, and
// accepts entries for plugins berth does not run.
func pluginConfiguration(path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	apiserverinstall.Install(scheme)
	obj, err := runtime.Decode(serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDecoder(), raw)
	if err != nil {
		return nil, err
	}
	file, ok := obj.(*apiserverconfig.AdmissionConfiguration)
	if !ok {
		return nil, fmt.Errorf("want an AdmissionConfiguration, got %T", obj)
	}
	var data []byte
	for i, plugin := range file.Plugins {
		if plugin.Name != PluginName {
			return nil, fmt.Errorf("plugins[%d]: berth has no configurable admission plugin %q (only %s)", i, plugin.Name, PluginName)
		}
		if data != nil {
			return nil, fmt.Errorf("plugins[%d]: %s is configured twice", i, PluginName)
		}
		if data, err = entryData(plugin, filepath.Dir(path)); err != nil {
			return nil, fmt.Errorf("plugins[%d] (%s): %w", i, PluginName, err)
		}
	}
	return data, nil
}

func entryData(plugin apiserverconfig.AdmissionPluginConfiguration, dir string) ([]byte, error) {
	switch {
	case plugin.Configuration != nil:
		return plugin.Configuration.Raw, nil
	case plugin.Path != "":
		path := plugin.Path
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		return os.ReadFile(path)
	default:
		// An entry with neither: the plugin's own defaults, as upstream.
		return []byte{}, nil
	}
}
