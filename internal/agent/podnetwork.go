package agent

import "github.com/berth/berth/internal/agent/podnet"

// podNetwork hands the Node's podCIDR to the runtime and, unless turned
// off, keeps host-gw routes to the other nodes' podCIDRs.
func (a *Agent) podNetwork() *podnet.Manager {
	cfg := podnet.Config{Client: a.client, NodeName: a.cfg.NodeName, Runtime: a.rt.Runtime, Logger: a.log.With("component", "podnet")}
	if a.cfg.HostGatewayRoutes {
		cfg.Routes = podnet.IPRoute{}
	}
	return podnet.New(cfg)
}
