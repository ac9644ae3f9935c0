package etcd

// WithClientWatches returns a view of s whose watches go through the etcd
// client, as an external cluster's do, so that tests run on an embedded
// member cover both watch sources. Close the original, not the view.
func WithClientWatches(s *Store) *Store {
	view := *s
	view.watches = clientWatches{s.client}
	view.closeFn = nil
	return &view
}
