package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"

	"github.com/berth/berth/internal/testkit/images"
	"github.com/berth/berth/internal/testkit/registry"
)

// Image references the pods and sandboxes use; both runtimes resolve their
// registries to the bench's loopback registry.
const (
	podImage   = images.Busybox              // docker.io/berth-test/busybox:latest
	pauseImage = "registry.k8s.io/pause:3.9" // both runtimes' default sandbox image
)

// mirroredRegistries are the hosts both runtimes send to the loopback registry.
var mirroredRegistries = []string{"docker.io", "registry.k8s.io"}

// startRegistry builds the pause and busybox test images offline, serves
// them from an in-memory registry on a loopback port and returns its
// host:port and a function that stops it.
func startRegistry(ctx context.Context) (string, func(), error) {
	catalogue, err := images.Catalogue(ctx, images.Options{})
	if err != nil {
		return "", nil, fmt.Errorf("build test images: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{
		Handler:           ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = srv.Serve(ln) }()
	host := ln.Addr().String()
	set := images.Set{pauseImage: catalogue[images.Pause], podImage: catalogue[images.Busybox]}
	if err := registry.PushContext(ctx, host, set); err != nil {
		srv.Close()
		return "", nil, err
	}
	return host, func() { srv.Close() }, nil
}
