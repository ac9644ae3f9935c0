package spec

import (
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// setProcess fills in args, env, working directory and terminal.
func setProcess(s *specs.Spec, cc *runtimeapi.ContainerConfig, img *v1.ConfigFile, hostname string) error {
	var cfg v1.Config
	if img != nil {
		cfg = img.Config
	}
	args := processArgs(cfg.Entrypoint, cfg.Cmd, cc.GetCommand(), cc.GetArgs())
	if len(args) == 0 {
		return invalid("no command specified: neither the container nor its image gives one")
	}
	for _, a := range args {
		if strings.ContainsRune(a, 0) {
			return invalid("command argument contains a NUL byte")
		}
	}
	s.Process.Args = args
	env, err := processEnv(hostname, cfg.Env, cc.GetEnvs(), cc.GetTty())
	if err != nil {
		return err
	}
	s.Process.Env = env
	cwd := cc.GetWorkingDir()
	if cwd == "" {
		cwd = cfg.WorkingDir
	}
	if cwd == "" {
		cwd = "/"
	}
	if !path.IsAbs(cwd) || strings.ContainsRune(cwd, 0) {
		return invalid("working directory %q is not an absolute path", cwd)
	}
	s.Process.Cwd = path.Clean(cwd)
	s.Process.Terminal = cc.GetTty()
	return nil
}

// processArgs merges image and CRI command lines the way Kubernetes
// documents it (and containerd implements it): a CRI command replaces the
// image's ENTRYPOINT and drops its CMD; CRI args alone replace only CMD.
func processArgs(entrypoint, cmd, command, args []string) []string {
	if len(command) == 0 {
		if len(args) == 0 {
			args = cmd
		}
		// An ENTRYPOINT of [""] is how images reset an inherited entrypoint.
		if !(len(entrypoint) == 1 && entrypoint[0] == "") {
			command = entrypoint
		}
	}
	out := make([]string, 0, len(command)+len(args))
	out = append(out, command...)
	return append(out, args...)
}

// processEnv is HOSTNAME, then the image's env, then the CRI envs, each key
// set once with the last value winning but keeping its first position.
func processEnv(hostname string, imageEnv []string, criEnv []*runtimeapi.KeyValue, tty bool) ([]string, error) {
	var keys []string
	vals := map[string]string{}
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			keys = append(keys, k)
		}
		vals[k] = v
	}
	set("PATH", strings.TrimPrefix(defaultPath, "PATH="))
	if strings.ContainsRune(hostname, 0) {
		// Refused with the sandbox already (ValidateSandbox); never let it
		// through into an environment either.
		return nil, invalid("hostname %q contains a NUL byte", hostname)
	}
	if hostname != "" {
		set("HOSTNAME", hostname)
	}
	if tty {
		set("TERM", "xterm")
	}
	for _, kv := range imageEnv {
		k, v, _ := strings.Cut(kv, "=")
		if k == "" || strings.ContainsRune(kv, 0) {
			continue
		}
		set(k, v)
	}
	for _, kv := range criEnv {
		if kv.GetKey() == "" || strings.ContainsAny(kv.GetKey(), "=\x00") || strings.ContainsRune(string(kv.GetValue()), 0) {
			return nil, invalid("invalid environment variable name %q", kv.GetKey())
		}
		set(kv.GetKey(), string(kv.GetValue()))
	}
	env := make([]string, 0, len(keys))
	for _, k := range keys {
		env = append(env, k+"="+vals[k])
	}
	return env, nil
}
