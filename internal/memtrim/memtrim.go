// Package memtrim gives back the pages of the berth binary that only start-up
// touched.
//
// berth is one multicall binary. The init functions of every package linked
// into it (kubectl's commands, every API group's scheme) run in every berth
// process and fault in tens of megabytes of its text and read-only data,
// though each subcommand runs only a fraction of that code afterwards. Those
// pages stay mapped, and counted in the process's resident set, until the
// process exits. Once a component is serving, DropStartupPages unmaps the
// binary's read-only pages from the process: they stay in the page cache,
// shared and reclaimable, and the pages the component still runs fault back
// in from there (minor faults). What remains resident is what the process
// really uses. No library does this; it is a few lines over /proc and madvise.
package memtrim

import "log/slog"

// DropStartupPages unmaps the executable's clean read-only pages from this
// process and logs how much of its resident set that gave back. Failures
// only log: nothing depends on the trim.
func DropStartupPages(log *slog.Logger) {
	freed, err := dropStartupPages()
	if err != nil {
		log.Debug("start-up pages kept", "err", err)
		return
	}
	log.Debug("start-up pages of the binary dropped", "residentKiB", freed)
}
