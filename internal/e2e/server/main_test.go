package server

import (
	"testing"

	"github.com/berth/berth/internal/testkit/berthbin"
)

// berthBin is the real binary (internal/testkit/berthbin).
var berthBin string

func TestMain(m *testing.M) { berthbin.Main(m, &berthBin) }
