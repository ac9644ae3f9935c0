package image

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Use records that containerID uses image imageRef (ID, tag or digest), so
// RemoveImage refuses the image until Release. PrepareRootfs does this itself.
func (s *Service) Use(imageRef, containerID string) error {
	if err := checkContainerID(containerID); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.useLocked(imageRef, containerID)
	return err
}

// Release ends containerID's use of its image. RemoveRootfs does this itself.
func (s *Service) Release(containerID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.releaseLocked(containerID)
}

func (s *Service) useLocked(imageRef, containerID string) (*imageRecord, error) {
	var rec *imageRecord
	err := s.meta.update(func(md *metadata) error {
		found, err := md.find(imageRef)
		if err != nil {
			return err
		}
		if found == nil {
			return notFound(imageRef)
		}
		if prev, ok := md.Users[containerID]; ok && prev != found.ID {
			return status.Errorf(codes.AlreadyExists, "container %s already uses image %s", containerID, prev)
		}
		md.Users[containerID] = found.ID
		rec = found
		return nil
	})
	return rec, err
}

func (s *Service) releaseLocked(containerID string) error {
	var present bool
	s.meta.view(func(md *metadata) { _, present = md.Users[containerID] })
	if !present {
		return nil
	}
	return s.meta.update(func(md *metadata) error {
		delete(md.Users, containerID)
		return nil
	})
}
