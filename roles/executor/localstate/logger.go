package localstate

import (
	"fmt"
	"log/slog"
)

// quietLogger routes Pebble's log lines to slog at debug level (errors at
// error level); Pebble otherwise prints to stderr.
type quietLogger struct{ l *slog.Logger }

func (q quietLogger) Infof(format string, args ...any) {
	q.l.Debug("pebble", "msg", fmt.Sprintf(format, args...))
}

func (q quietLogger) Errorf(format string, args ...any) {
	q.l.Error("pebble", "msg", fmt.Sprintf(format, args...))
}

// Fatalf logs and panics: Pebble expects Fatalf not to return.
func (q quietLogger) Fatalf(format string, args ...any) {
	q.l.Error("pebble fatal", "msg", fmt.Sprintf(format, args...))
	panic(fmt.Sprintf(format, args...))
}
