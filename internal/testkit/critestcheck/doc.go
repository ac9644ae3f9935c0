// Package critestcheck holds one integration test of the test kit itself:
// critest v1.37.0 runs its image-dependent specs against containerd (the
// upstream CRI runtime) pulling the kit's critest images from the kit's
// in-process registry. If these specs pass there, a failure of the same
// spec against berth's runtime is the runtime's, not the images'.
package critestcheck
