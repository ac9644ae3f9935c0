package image

import (
	"fmt"
	"strings"

	"github.com/distribution/reference"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// parsedRef is an image reference normalised the way containerd and CRI-O
// normalise them: "busybox" is "docker.io/library/busybox:latest"; a reference
// with a digest keeps only the digest.
type parsedRef struct {
	named reference.Named
	// tagged is set for a tag reference, canonical for a digest reference;
	// exactly one of them is non-nil.
	tagged    reference.NamedTagged
	canonical reference.Canonical
}

// parseRef normalises ref. Errors are gRPC InvalidArgument.
func parseRef(ref string) (parsedRef, error) {
	if strings.TrimSpace(ref) == "" {
		return parsedRef{}, status.Error(codes.InvalidArgument, "image reference is empty")
	}
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return parsedRef{}, status.Errorf(codes.InvalidArgument, "invalid image reference %q: %v", ref, err)
	}
	if c, ok := named.(reference.Canonical); ok {
		// "name:tag@digest" pulls by digest; the tag is informational only,
		// as in containerd.
		c, err := reference.WithDigest(reference.TrimNamed(named), c.Digest())
		if err != nil {
			return parsedRef{}, status.Errorf(codes.InvalidArgument, "invalid image reference %q: %v", ref, err)
		}
		return parsedRef{named: c, canonical: c}, nil
	}
	tagged, ok := reference.TagNameOnly(named).(reference.NamedTagged)
	if !ok {
		return parsedRef{}, status.Errorf(codes.InvalidArgument, "invalid image reference %q", ref)
	}
	return parsedRef{named: tagged, tagged: tagged}, nil
}

// String is the normalised reference, e.g. "docker.io/library/busybox:latest".
// It is empty for the zero parsedRef (an image imported without a name).
func (r parsedRef) String() string {
	if r.named == nil {
		return ""
	}
	return r.named.String()
}

// Host is the registry host as written in the name, e.g. "docker.io".
func (r parsedRef) Host() string { return reference.Domain(r.named) }

// Path is the repository path inside the registry, e.g. "library/busybox".
func (r parsedRef) Path() string { return reference.Path(r.named) }

// Repository is host/path without tag or digest.
func (r parsedRef) Repository() string { return reference.TrimNamed(r.named).String() }

// Suffix is ":tag" or "@digest", the part that selects a manifest.
func (r parsedRef) Suffix() string {
	if r.canonical != nil {
		return "@" + r.canonical.Digest().String()
	}
	return ":" + r.tagged.Tag()
}

// repoDigest is the "repository@digest" string CRI reports for a manifest.
func repoDigest(repository, manifestDigest string) string {
	return fmt.Sprintf("%s@%s", repository, manifestDigest)
}
