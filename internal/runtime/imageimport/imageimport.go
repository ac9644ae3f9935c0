// Package imageimport is berth runtime's one RPC beyond CRI: loading an
// image archive (OCI layout or docker save, as a tar) into the runtime's
// image store, so that a machine without a registry can run pods. It is
// served on the runtime's own CRI socket, so only the socket's group may use
// it, and it is what `berth image import` calls.
//
// The service is declared with grpc's ServiceDesc and protobuf's well-known
// wrapper types instead of generated code: one client-streaming method does
// not justify a protoc toolchain in the build.
package imageimport

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Importer loads every image of a tar archive and returns their IDs.
type Importer interface {
	Import(ctx context.Context, archive io.Reader) ([]string, error)
}

const (
	serviceName = "berth.runtime.v1alpha1.ImageImport"
	importPath  = "/" + serviceName + "/Import"
	// chunkSize keeps each message well under grpc's 4 MiB default limit.
	chunkSize = 1 << 20
)

// Register serves the import RPC with imp on g.
func Register(g *grpc.Server, imp Importer) {
	g.RegisterService(&grpc.ServiceDesc{
		ServiceName: serviceName,
		HandlerType: (*Importer)(nil),
		Streams: []grpc.StreamDesc{{
			StreamName:    "Import",
			ClientStreams: true,
			Handler: func(srv any, stream grpc.ServerStream) error {
				return serveImport(stream, srv.(Importer))
			},
		}},
		Metadata: "berth/runtime/imageimport",
	}, imp)
}

// serveImport feeds the streamed chunks to the importer as one reader.
func serveImport(stream grpc.ServerStream, imp Importer) error {
	ids, err := imp.Import(stream.Context(), &chunkReader{recv: func() ([]byte, error) {
		var chunk wrapperspb.BytesValue
		if err := stream.RecvMsg(&chunk); err != nil {
			return nil, err
		}
		return chunk.GetValue(), nil
	}})
	if err != nil {
		if _, ok := status.FromError(err); ok {
			return err
		}
		return status.Error(codes.Internal, err.Error())
	}
	out := &structpb.ListValue{}
	for _, id := range ids {
		out.Values = append(out.Values, structpb.NewStringValue(id))
	}
	return stream.SendMsg(out)
}

// Import streams archive to the runtime behind conn and returns the IDs of
// the images it loaded.
func Import(ctx context.Context, conn grpc.ClientConnInterface, archive io.Reader) ([]string, error) {
	stream, err := conn.NewStream(ctx, &grpc.StreamDesc{StreamName: "Import", ClientStreams: true}, importPath)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, chunkSize)
	for {
		n, rerr := io.ReadFull(archive, buf)
		if n > 0 {
			if err := stream.SendMsg(wrapperspb.Bytes(buf[:n])); err != nil {
				break // the server ended the stream; CloseAndRecv reports why
			}
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			return nil, fmt.Errorf("read archive: %w", rerr)
		}
	}
	if err := stream.CloseSend(); err != nil {
		return nil, err
	}
	var out structpb.ListValue
	if err := stream.RecvMsg(&out); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(out.Values))
	for _, v := range out.Values {
		ids = append(ids, v.GetStringValue())
	}
	return ids, nil
}

// chunkReader turns a stream of byte chunks into an io.Reader.
type chunkReader struct {
	recv    func() ([]byte, error)
	pending []byte
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.pending) == 0 {
		chunk, err := r.recv()
		if err != nil {
			return 0, err // io.EOF when the client closed its side
		}
		r.pending = chunk
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}
