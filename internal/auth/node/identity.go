// Package node is berth's Node authorizer: it confines each node agent
// (user system:node:NAME in group system:nodes) to its own Node and Lease,
// the pods bound to it, and the secrets, configmaps, serviceaccounts and
// persistentvolumeclaims those pods reference. Which objects a node's pods
// reference is kept in a Graph fed by informers, as upstream's node
// authorizer does; upstream's lives in k8s.io/kubernetes, which is not
// importable, so berth carries its own smaller one.
package node

import (
	"slices"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
)

// UserPrefix starts every node agent's user name.
const UserPrefix = "system:node:"

// Name returns the node a user speaks for, and whether the user is a node
// at all: named system:node:NAME and a member of system:nodes, as upstream's
// nodeidentity decides.
func Name(u user.Info) (string, bool) {
	if u == nil || !slices.Contains(u.GetGroups(), user.NodesGroup) {
		return "", false
	}
	name, ok := strings.CutPrefix(u.GetName(), UserPrefix)
	if !ok || name == "" {
		return "", false
	}
	return name, true
}
