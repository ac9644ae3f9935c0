package main

import (
	"cmp"
	"math"
	"slices"
)

// quantile returns the q-quantile (0..1) of xs by the nearest-rank method.
func quantile[T cmp.Ordered](xs []T, q float64) T {
	var zero T
	if len(xs) == 0 {
		return zero
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(q * float64(len(s))))
	return s[max(rank, 1)-1]
}

func median[T cmp.Ordered](xs []T) T { return quantile(xs, 0.5) }
