package openapi

import (
	"testing"

	"github.com/berth/berth/internal/apiserver/discovery"
)

// BenchmarkHandler measures building every document at server start-up.
func BenchmarkHandler(b *testing.B) {
	for b.Loop() {
		if _, err := Handler(discovery.Default(), Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
