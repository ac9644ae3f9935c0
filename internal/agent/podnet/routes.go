package podnet

import "context"

// Routes is the part of the node's routing table berth owns: routes it
// installed are tagged so that List finds exactly those, also after a
// restart of the agent.
type Routes interface {
	List(ctx context.Context) ([]Route, error)
	Replace(ctx context.Context, r Route) error
	Delete(ctx context.Context, r Route) error
}
