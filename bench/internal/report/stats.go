package report

import (
	"cmp"
	"math"
	"os"
	"slices"
	"strings"
)

// Quantile returns the q-quantile (0..1) of xs by the nearest-rank method:
// always one of the samples, never an interpolation between two.
func Quantile[T cmp.Ordered](xs []T, q float64) T {
	var zero T
	if len(xs) == 0 {
		return zero
	}
	s := slices.Clone(xs) // the caller's order is left alone
	slices.Sort(s)
	rank := int(math.Ceil(q * float64(len(s))))
	return s[max(rank, 1)-1]
}

// Median is the nearest-rank 0.5-quantile of xs.
func Median[T cmp.Ordered](xs []T) T { return Quantile(xs, 0.5) }

// LoadAverage is the machine's 1-minute load average ("?" if unknown):
// the reports print it so a figure taken on a busy machine shows as such.
func LoadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(data))[0]
}
