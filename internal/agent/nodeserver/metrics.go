package nodeserver

import (
	"fmt"
	"log/slog"
)

// slogPrinter lets promhttp report collection errors through the server's
// logger (promhttp wants a Println).
type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Println(v ...any) { p.log.Warn("serve /metrics", "err", fmt.Sprint(v...)) }
