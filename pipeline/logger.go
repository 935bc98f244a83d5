package pipeline

import (
	"context"
	"log/slog"

	"github.com/ThreeDotsLabs/watermill"
)

// levelGate is a Watermill logger over slog that checks the level before
// building anything: Watermill's own slog adapter turns the fields into
// attributes first, which the router does at trace level for every message.
type levelGate struct {
	s     *slog.Logger
	inner watermill.LoggerAdapter
	// info is the slog level Watermill's Info maps to.
	info slog.Level
}

// watermillLogger adapts l for Watermill, logging Watermill's Info at info.
func watermillLogger(l *slog.Logger, info slog.Level) watermill.LoggerAdapter {
	return &levelGate{s: l, info: info,
		inner: watermill.NewSlogLoggerWithLevelMapping(l, map[slog.Level]slog.Level{slog.LevelInfo: info})}
}

func (g *levelGate) enabled(level slog.Level) bool { return g.s.Enabled(context.Background(), level) }

func (g *levelGate) Error(msg string, err error, fields watermill.LogFields) {
	if g.enabled(slog.LevelError) {
		g.inner.Error(msg, err, fields)
	}
}

func (g *levelGate) Info(msg string, fields watermill.LogFields) {
	if g.enabled(g.info) {
		g.inner.Info(msg, fields)
	}
}

func (g *levelGate) Debug(msg string, fields watermill.LogFields) {
	if g.enabled(slog.LevelDebug) {
		g.inner.Debug(msg, fields)
	}
}

func (g *levelGate) Trace(msg string, fields watermill.LogFields) {
	if g.enabled(watermill.LevelTrace) {
		g.inner.Trace(msg, fields)
	}
}

func (g *levelGate) With(fields watermill.LogFields) watermill.LoggerAdapter {
	args := make([]any, 0, 2*len(fields))
	for k, v := range fields {
		args = append(args, k, v)
	}
	return watermillLogger(g.s.With(args...), g.info)
}
