package node

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	evictionapi "k8s.io/kubernetes/pkg/kubelet/eviction/api"
)

// Thresholds are the hard eviction thresholds the node's pressure
// conditions are reported against (the kubelet's --eviction-hard): a
// signal is under pressure when what is available falls below its value.
// A signal missing from the map never reports pressure.
type Thresholds map[evictionapi.Signal]evictionapi.ThresholdValue

// measuredSignals are the signals the agent observes.
var measuredSignals = []evictionapi.Signal{
	evictionapi.SignalMemoryAvailable, evictionapi.SignalNodeFsAvailable, evictionapi.SignalPIDAvailable,
}

// DefaultThresholds are the kubelet's defaults for what the agent measures
// (memory.available<100Mi, nodefs.available<10%) plus pid.available<10%.
var DefaultThresholds = Thresholds{
	evictionapi.SignalMemoryAvailable: {Quantity: resource.NewQuantity(100<<20, resource.BinarySI)},
	evictionapi.SignalNodeFsAvailable: {Percentage: 0.1},
	evictionapi.SignalPIDAvailable:    {Percentage: 0.1},
}

// ParseThresholds reads --eviction-hard statements (signal → "10%" or a
// quantity) as the kubelet reads them: they replace the defaults, and 0%
// or 100% turns a signal off. Signals the agent does not measure (imagefs,
// inodes) are refused rather than silently ignored.
func ParseThresholds(statements map[string]string) (Thresholds, error) {
	out := Thresholds{}
	for _, name := range slices.Sorted(maps.Keys(statements)) {
		signal, val := evictionapi.Signal(name), strings.TrimSpace(statements[name])
		if !slices.Contains(measuredSignals, signal) {
			return nil, fmt.Errorf("eviction signal %q is not one the agent measures (%s)", name, joinSignals(measuredSignals))
		}
		value, off, err := parseThresholdValue(val)
		if err != nil {
			return nil, fmt.Errorf("eviction threshold %s<%s: %w", name, val, err)
		}
		if !off {
			out[signal] = value
		}
	}
	return out, nil
}

func parseThresholdValue(val string) (v evictionapi.ThresholdValue, off bool, err error) {
	if pct, ok := strings.CutSuffix(val, "%"); ok {
		if val == "0%" || val == "100%" {
			return v, true, nil
		}
		f, err := strconv.ParseFloat(pct, 32)
		if err != nil || f < 0 || f > 100 {
			return v, false, fmt.Errorf("a percentage must be between 0%% and 100%%")
		}
		return evictionapi.ThresholdValue{Percentage: float32(f) / 100}, false, nil
	}
	q, err := resource.ParseQuantity(val)
	if err != nil {
		return v, false, err
	}
	if q.Sign() <= 0 {
		return v, false, fmt.Errorf("a quantity must be positive")
	}
	return evictionapi.ThresholdValue{Quantity: &q}, false, nil
}

// under reports whether available is below signal's threshold out of
// capacity; it is false for a signal with no threshold or no capacity.
func (t Thresholds) under(signal evictionapi.Signal, available, capacity int64) bool {
	v, ok := t[signal]
	if !ok || capacity <= 0 {
		return false
	}
	return available < evictionapi.GetThresholdQuantity(v, resource.NewQuantity(capacity, resource.BinarySI)).Value()
}

func joinSignals(signals []evictionapi.Signal) string {
	names := make([]string, len(signals))
	for i, s := range signals {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}
