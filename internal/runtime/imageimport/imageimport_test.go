package imageimport

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// digestImporter "imports" by hashing what it receives, so a test can check
// that every byte arrived in order; it fails on demand.
type digestImporter struct{ fail error }

func (d digestImporter) Import(_ context.Context, r io.Reader) ([]string, error) {
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		return nil, err
	}
	if d.fail != nil {
		return nil, d.fail
	}
	return []string{fmt.Sprintf("sha256:%x", h.Sum(nil)), fmt.Sprint(n)}, nil
}

func serve(t *testing.T, imp Importer) *grpc.ClientConn {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	Register(g, imp)
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func TestImportStreamsEveryByte(t *testing.T) {
	conn := serve(t, digestImporter{})
	for _, size := range []int{0, 1, chunkSize - 1, chunkSize, 3*chunkSize + 17} {
		data := bytes.Repeat([]byte{0, 1, 2, 3, 4, 5, 6}, size/7+1)[:size]
		ids, err := Import(context.Background(), conn, bytes.NewReader(data))
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		want := []string{fmt.Sprintf("sha256:%x", sha256.Sum256(data)), fmt.Sprint(size)}
		if fmt.Sprint(ids) != fmt.Sprint(want) {
			t.Fatalf("size %d: got %v, want %v", size, ids, want)
		}
	}
}

func TestImportErrorsKeepTheirCode(t *testing.T) {
	conn := serve(t, digestImporter{fail: status.Error(codes.InvalidArgument, "not a tar archive")})
	_, err := Import(context.Background(), conn, bytes.NewReader([]byte("junk")))
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("got %v, want InvalidArgument", err)
	}
	conn = serve(t, digestImporter{fail: io.ErrShortWrite})
	_, err = Import(context.Background(), conn, bytes.NewReader([]byte("junk")))
	if status.Code(err) != codes.Internal {
		t.Fatalf("got %v, want Internal", err)
	}
}
