package network

import (
	"encoding/json"
	"fmt"
	"net"
)

// DefaultConfFile is the name of the conflist berth writes when the conf dir
// has none; only this file is rewritten when the pod CIDR changes.
const DefaultConfFile = "10-berth.conflist"

// DefaultSubnet is the pod subnet of the default network.
const DefaultSubnet = "10.88.0.0/16"

const (
	defaultNetworkName = "berth"
	defaultBridge      = "berth0"
	cniVersion         = "1.0.0" // the newest Debian 12's plugins speak
)

// defaultConfList renders the default network: a host-local bridge with no
// masquerading (pod traffic stays on this host) plus portmap for hostPort.
func defaultConfList(subnet, ipamDataDir string) ([]byte, error) {
	if _, _, err := net.ParseCIDR(subnet); err != nil {
		return nil, fmt.Errorf("invalid pod subnet %q: %w", subnet, err)
	}
	conf := map[string]any{
		"cniVersion": cniVersion,
		"name":       defaultNetworkName,
		"plugins": []any{
			map[string]any{
				"type":      "bridge",
				"bridge":    defaultBridge,
				"isGateway": true,
				// The gateway is the subnet's first address (host-local's
				// default). When the pod CIDR changes, the bridge's old
				// gateway address is replaced rather than refused.
				"forceAddress": true,
				"ipMasq":       false,
				"hairpinMode":  true,
				"ipam": map[string]any{
					"type":    "host-local",
					"dataDir": ipamDataDir,
					"ranges":  [][]map[string]string{{{"subnet": subnet}}},
					"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
				},
			},
			map[string]any{
				"type":         "portmap",
				"capabilities": map[string]bool{"portMappings": true},
				"snat":         true,
			},
		},
	}
	return json.MarshalIndent(conf, "", "  ")
}

// loopbackConf brings up lo in every pod namespace.
var loopbackConf = []byte(`{"cniVersion":"` + cniVersion + `","name":"berth-loopback","type":"loopback"}`)
