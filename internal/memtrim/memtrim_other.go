//go:build !linux

package memtrim

import "errors"

func dropStartupPages() (uint64, error) {
	return 0, errors.New("only on Linux")
}
