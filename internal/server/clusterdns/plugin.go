package clusterdns

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/kubernetes"

	// The other plugins the Corefile names; each registers itself.
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"

	"k8s.io/client-go/rest"
)

// directive is CoreDNS's kubernetes plugin set up with an in-process API
// client. The plugin's own setup can only reach the API through a kubeconfig
// file or the in-cluster service account, and it replaces klog's logger for
// the whole process; this one parses the same stanza with the plugin's
// ParseStanza and hands it the server's loopback client instead.
const directive = "kubernetes_inprocess"

// directives is the plugin chain's order (CoreDNS's plugin.cfg order,
// trimmed to the plugins the Corefile uses).
var directives = []string{"bind", "errors", "cache", directive, "forward"}

var registerOnce sync.Once
var registerErr error

// register sets CoreDNS's process-wide directive list and adds berth's
// directive; every instance in the process shares them.
func register() error {
	registerOnce.Do(func() {
		dnsserver.Quiet, caddy.Quiet = true, true
		if registerErr = dnsserver.SetDirectives(directives); registerErr != nil {
			return
		}
		plugin.Register(directive, setupInProcess)
	})
	return registerErr
}

// clients holds each running instance's API client configuration, by the
// Corefile's file name (unique per instance), for setupInProcess to find.
var clients sync.Map // string → *rest.Config

// setupInProcess is the kubernetes plugin's setup with the instance's
// in-process client configuration.
func setupInProcess(c *caddy.Controller) error {
	v, ok := clients.Load(c.File())
	if !ok {
		return plugin.Error(directive, fmt.Errorf("no API client for %q", c.File()))
	}
	k, err := parseStanza(c)
	if err != nil {
		return plugin.Error(directive, err)
	}
	k.ClientConfig = fixedClientConfig{config: v.(*rest.Config)}
	onStart, onShut, err := k.InitKubeCache(context.Background())
	if err != nil {
		return plugin.Error(directive, err)
	}
	if onStart != nil {
		c.OnStartup(onStart)
	}
	if onShut != nil {
		c.OnShutdown(onShut)
	}
	dnsserver.GetConfig(c).AddPlugin(func(next plugin.Handler) plugin.Handler {
		k.Next = next
		return k
	})
	return nil
}

// parseStanza reads the directive's one stanza, as the plugin's own setup.
func parseStanza(c *caddy.Controller) (*kubernetes.Kubernetes, error) {
	var k *kubernetes.Kubernetes
	for c.Next() {
		if k != nil {
			return nil, plugin.ErrOnce
		}
		var err error
		if k, err = kubernetes.ParseStanza(c); err != nil {
			return nil, err
		}
	}
	if k == nil {
		return nil, errors.New("no stanza")
	}
	return k, nil
}
