// Package registry runs an in-memory OCI distribution registry
// (go-containerregistry's pkg/registry) on a loopback port for tests, and
// pushes the testkit's image sets into it with pkg/v1/remote, so image pulls
// are tested against a real registry protocol without any network.
package registry

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/berth/berth/internal/testkit/images"
)

// Start serves an empty in-memory registry on 127.0.0.1:<random> for the
// life of t and returns its host:port.
func Start(t testing.TB) string {
	t.Helper()
	// pkg/registry logs every request through a *log.Logger; discard it to
	// keep test output readable (failures surface through the client).
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// Push pushes every artifact of set to host (plain HTTP), each under its
// repository path with any registry host dropped (images.RepositoryPath).
func Push(t testing.TB, host string, set images.Set) {
	t.Helper()
	if err := PushContext(t.Context(), host, set); err != nil {
		t.Fatal(err)
	}
}

// PushContext is Push for callers without a testing.TB (the testregistry tool).
func PushContext(ctx context.Context, host string, set images.Set) error {
	// A transport of its own, closed when done, so no idle connection of the
	// pusher keeps the registry server from shutting down promptly.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	for _, ref := range set.Names() {
		if err := pushOne(ctx, tr, host, ref, set[ref]); err != nil {
			return err
		}
	}
	return nil
}

// Reference returns the name under which Push stores ref in host's registry.
func Reference(host, ref string) (name.Reference, error) {
	r, err := name.ParseReference(host+"/"+images.RepositoryPath(ref), name.Insecure)
	if err != nil {
		return nil, fmt.Errorf("reference %q on %s: %w", ref, host, err)
	}
	return r, nil
}

func pushOne(ctx context.Context, tr http.RoundTripper, host, ref string, a images.Artifact) error {
	dst, err := Reference(host, ref)
	if err != nil {
		return err
	}
	switch {
	case a.Image != nil:
		err = remote.Write(dst, a.Image, remote.WithContext(ctx), remote.WithTransport(tr))
	case a.Index != nil:
		err = remote.WriteIndex(dst, a.Index, remote.WithContext(ctx), remote.WithTransport(tr))
	default:
		err = fmt.Errorf("artifact has neither an image nor an index")
	}
	if err != nil {
		return fmt.Errorf("push %s as %s: %w", ref, dst, err)
	}
	return nil
}

// StartWithPodImages serves a registry holding the images every cluster test
// runs: the pause image under the kubelet's default name, and busybox. It
// returns its host:port.
func StartWithPodImages(t testing.TB) string {
	t.Helper()
	catalogue, err := images.Catalogue(context.Background(), images.Options{})
	if err != nil {
		t.Fatal(err)
	}
	host := Start(t)
	Push(t, host, images.Set{
		"registry.k8s.io/pause:3.9": catalogue[images.Pause],
		images.Busybox:              catalogue[images.Busybox],
	})
	return host
}
