package etcd

import (
	"context"
	"log/slog"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// zapToSlog returns a zap logger that forwards entries at or above minLevel to
// logger. etcd logs only through zap, and zap ships adapters in the other
// direction (slog over zap) only, so this small core bridges the two; it keeps
// berth's library packages logging solely through the *slog.Logger they are given.
//
// Messages listed in drop are discarded: warnings that do not apply to how
// berth runs the member.
func zapToSlog(logger *slog.Logger, minLevel zapcore.Level, drop ...string) *zap.Logger {
	dropped := make(map[string]bool, len(drop))
	for _, m := range drop {
		dropped[m] = true
	}
	return zap.New(&slogCore{logger: logger, min: minLevel, drop: dropped})
}

type slogCore struct {
	logger *slog.Logger
	min    zapcore.Level
	drop   map[string]bool
	attrs  []slog.Attr // fields added with With
}

func (c *slogCore) Enabled(l zapcore.Level) bool { return l >= c.min }

func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	clone := *c
	clone.attrs = append(append([]slog.Attr(nil), c.attrs...), fieldsToAttrs(fields)...)
	return &clone
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) && !c.drop[e.Message] {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	attrs := append(append([]slog.Attr(nil), c.attrs...), fieldsToAttrs(fields)...)
	if e.LoggerName != "" {
		attrs = append(attrs, slog.String("logger", e.LoggerName))
	}
	c.logger.LogAttrs(context.Background(), slogLevel(e.Level), e.Message, attrs...)
	return nil
}

func (c *slogCore) Sync() error { return nil }

func fieldsToAttrs(fields []zapcore.Field) []slog.Attr {
	if len(fields) == 0 {
		return nil
	}
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range fields {
		f.AddTo(enc)
	}
	attrs := make([]slog.Attr, 0, len(enc.Fields))
	for k, v := range enc.Fields {
		attrs = append(attrs, slog.Any(k, v))
	}
	return attrs
}

func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l >= zapcore.ErrorLevel:
		return slog.LevelError
	case l >= zapcore.WarnLevel:
		return slog.LevelWarn
	case l >= zapcore.InfoLevel:
		return slog.LevelInfo
	default:
		return slog.LevelDebug
	}
}
