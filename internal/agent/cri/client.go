// Package cri connects the agent to a CRI v1 runtime (berth runtime,
// containerd, CRI-O) over its unix socket. It is a thin wrapper over the
// generated k8s.io/cri-api clients: k8s.io/cri-client would add klog-based
// logging and its own retry policy the agent does not want, so only the
// dialing is done here.
package cri

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// maxMsgSize matches the kubelet's CRI client limit (16 MiB), so large
// ListContainers answers on busy nodes are not refused.
const maxMsgSize = 16 << 20

// Client is a connection to one CRI endpoint.
type Client struct {
	Runtime runtimeapi.RuntimeServiceClient
	Images  runtimeapi.ImageServiceClient
	conn    *grpc.ClientConn
}

// Option adjusts how Dial connects.
type Option func(*[]grpc.DialOption)

// WithMetrics measures every call made through the Client in m.
func WithMetrics(m *Metrics) Option {
	return func(opts *[]grpc.DialOption) { *opts = append(*opts, m.dialOptions()...) }
}

// Dial connects to endpoint ("unix:///path" or a bare absolute path) and
// checks with a Version call that a CRI v1 runtime answers.
func Dial(ctx context.Context, endpoint string, options ...Option) (*Client, *runtimeapi.VersionResponse, error) {
	target, err := Target(endpoint)
	if err != nil {
		return nil, nil, err
	}
	dialOpts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsgSize), grpc.MaxCallSendMsgSize(maxMsgSize)),
	}
	for _, o := range options {
		o(&dialOpts)
	}
	conn, err := grpc.NewClient(target, dialOpts...)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to CRI endpoint %s: %w", endpoint, err)
	}
	c := &Client{
		Runtime: runtimeapi.NewRuntimeServiceClient(conn),
		Images:  runtimeapi.NewImageServiceClient(conn),
		conn:    conn,
	}
	v, err := c.Runtime.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("CRI endpoint %s: Version: %w", endpoint, err)
	}
	return c, v, nil
}

// Conn is the underlying connection, for services served beside CRI on the
// same socket (berth runtime's image import).
func (c *Client) Conn() grpc.ClientConnInterface { return c.conn }

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Target turns a runtime endpoint flag into a gRPC target. Only unix sockets
// are accepted: CRI has no authentication, so a TCP endpoint would expose the
// runtime to anyone who can reach the port.
func Target(endpoint string) (string, error) {
	switch {
	case strings.HasPrefix(endpoint, "unix:///"):
		return endpoint, nil
	case strings.HasPrefix(endpoint, "/"):
		return "unix://" + endpoint, nil
	default:
		return "", fmt.Errorf("runtime endpoint %q: want unix:///absolute/path", endpoint)
	}
}
