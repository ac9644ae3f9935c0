package etcd

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// WithClientWatches returns a view of s whose watches go through the etcd
// client, as an external cluster's do, so that tests run on an embedded
// member cover both watch sources. Close the original, not the view.
func WithClientWatches(s *Store) *Store {
	view := *s
	view.watches = clientWatches{s.client}
	view.closeFn = nil
	return &view
}

// Leases lists the leases etcd holds.
func Leases(ctx context.Context, s *Store) ([]clientv3.LeaseID, error) {
	resp, err := s.client.Leases(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]clientv3.LeaseID, 0, len(resp.Leases))
	for _, l := range resp.Leases {
		ids = append(ids, l.ID)
	}
	return ids, nil
}

// Revoke revokes a lease, deleting its keys, as an operator could.
func Revoke(ctx context.Context, s *Store, id clientv3.LeaseID) error {
	_, err := s.client.Revoke(ctx, id)
	return err
}

// DBSize is the member's database file size and the part of it in use.
func DBSize(ctx context.Context, s *Store) (size, inUse int64, err error) {
	st, err := s.client.Status(ctx, "")
	if err != nil {
		return 0, 0, err
	}
	return st.DbSize, st.DbSizeInUse, nil
}

// NoSpaceAlarmed reports whether NOSPACE is raised.
func NoSpaceAlarmed(ctx context.Context, s *Store) (bool, error) {
	alarms, err := s.noSpaceAlarms(ctx)
	return len(alarms) > 0, err
}
