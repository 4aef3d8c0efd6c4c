package runner

import (
	"context"
	"fmt"
	stdlog "log"
	"log/slog"
	"net/url"
	"reflect"

	"github.com/IBM/sarama"
	goredis "github.com/redis/go-redis/v9"

	"github.com/pacer-dev/pacer/internal/app/config"
	"github.com/pacer-dev/pacer/internal/base/redact"
	"github.com/pacer-dev/pacer/pacer"
)

// newRedactor returns the redactor for everything the worker lets out
// (logs, /status, /readyz): it masks URL credentials and query values
// everywhere, and the literal value of every secret field of cfg (and the
// password inside a secret that is a URL or DSN).
func NewRedactor(cfg *config.Config) *redact.Redactor {
	return redact.New(secretsOf(cfg)...)
}

var secretType = reflect.TypeFor[config.Secret]()

// secretsOf collects the values of every config.Secret in cfg (struct
// fields, maps and slices, recursively).
func secretsOf(cfg *config.Config) []string {
	var out []string
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch {
		case v.Type() == secretType:
			s := v.Interface().(config.Secret).Reveal()
			if s == "" {
				return
			}
			out = append(out, s)
			if u, err := url.Parse(s); err == nil && u.User != nil {
				if pw, ok := u.User.Password(); ok {
					out = append(out, pw)
				}
			}
			return
		}
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i))
				}
			}
		case reflect.Map:
			for it := v.MapRange(); it.Next(); {
				walk(it.Value())
			}
		case reflect.Slice, reflect.Array:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem())
			}
		}
	}
	walk(reflect.ValueOf(*cfg))
	return out
}

// routeLibraryLoggers sends what go-redis, sarama and the standard library
// logger print through log (so log.format: json stays JSON, and redaction
// applies). These libraries only offer process-wide loggers; main owns the
// process, so it sets them once per run.
func RouteLibraryLoggers(log *slog.Logger) {
	goredis.SetLogger(redisLogger{log})
	sarama.Logger = slog.NewLogLogger(log.Handler(), slog.LevelDebug)
	stdlog.SetFlags(0)
	stdlog.SetOutput(slogWriter{log})
}

type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.InfoContext(ctx, "redis: "+fmt.Sprintf(format, v...), "logger", "go-redis")
}

// slogWriter turns each write of the standard logger into a log record.
type slogWriter struct{ log *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	msg := string(p)
	for len(msg) > 0 && msg[len(msg)-1] == '\n' {
		msg = msg[:len(msg)-1]
	}
	w.log.Warn(msg, "logger", "log")
	return len(p), nil
}

// redactDeadLetter hands the dead-letter destination a reason whose text
// has secrets masked (a downstream may echo a token in its error body).
type redactDeadLetter struct {
	dl  pacer.DeadLetterer
	red *redact.Redactor
}

func (d redactDeadLetter) DeadLetter(ctx context.Context, m *pacer.Message, reason error) error {
	return d.dl.DeadLetter(ctx, m, d.red.Wrap(reason))
}

// Ready passes the destination's readiness through.
func (d redactDeadLetter) Ready(ctx context.Context) error {
	if rc, ok := d.dl.(pacer.ReadyChecker); ok {
		return rc.Ready(ctx)
	}
	return nil
}
