package apiserver

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	apiresource "k8s.io/apimachinery/pkg/api/resource"
)

func resourceQuantity(s string) apiresource.Quantity { return apiresource.MustParse(s) }

// storeRevision is the store's current revision: any write moves it.
func storeRevision(t *testing.T, s *testServer) int64 {
	t.Helper()
	rev, err := s.store.CurrentRevision(context.Background())
	if err != nil {
		t.Fatalf("store revision: %v", err)
	}
	return rev
}

// assertStoreUnchanged fails if anything was written since before.
func assertStoreUnchanged(t *testing.T, s *testServer, before int64) {
	t.Helper()
	if after := storeRevision(t, s); after != before {
		t.Fatalf("store revision moved %d -> %d: a rejected request wrote", before, after)
	}
}

func ioCopy(dst *strings.Builder, resp *http.Response) (int64, error) {
	return io.Copy(dst, resp.Body)
}
