package image

import (
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Which container uses which image lives in each container's mount record
// (containers/ID/mount.json, written durably before PrepareRootfs returns
// and removed with the rootfs); Service.users is its in-memory index,
// rebuilt from those records when the store opens. One durable record per
// container, not a second copy in metadata.json, means creating or removing
// a container rewrites no index.

// loadUsers reads every container's mount record into a users index. A
// container without a readable record uses nothing: Recover reports it.
func loadUsers(rootfs *rootfsManager) (map[string]string, error) {
	ids, err := rootfs.list()
	if err != nil {
		return nil, err
	}
	users := make(map[string]string, len(ids))
	for _, id := range ids {
		if rec, err := rootfs.readRecord(id); err == nil {
			users[id] = rec.ImageID
		}
	}
	return users, nil
}

// useLocked records, in memory, that containerID uses the image imageRef
// names; its mount record makes that durable. Callers hold s.mu.
func (s *Service) useLocked(imageRef, containerID string) (*imageRecord, error) {
	rec, err := s.lookup(imageRef)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, notFound(imageRef)
	}
	if prev, ok := s.users[containerID]; ok && prev != rec.ID {
		return nil, status.Errorf(codes.AlreadyExists, "container %s already uses image %s", containerID, prev)
	}
	s.users[containerID] = rec.ID
	return rec, nil
}

// releaseLocked ends containerID's use of its image. Callers hold s.mu.
func (s *Service) releaseLocked(containerID string) {
	delete(s.users, containerID)
}

// usersOfLocked returns the containers using image id, sorted. Callers hold s.mu.
func (s *Service) usersOfLocked(id string) []string {
	var users []string
	for c, img := range s.users {
		if img == id {
			users = append(users, c)
		}
	}
	slices.Sort(users)
	return users
}
