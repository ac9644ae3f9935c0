package server

import (
	"crypto/rand"
	"encoding/hex"
)

// newID returns a 64-hex-digit ID like those of containerd and CRI-O, which
// crictl shortens to 13 characters for display.
func newID() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b[:])
}
