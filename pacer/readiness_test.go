package pacer_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/pacer/pacertest"
)

// readySource is a pacertest source that never ends and reports the
// readiness it is told.
type readySource struct {
	pacer.Source
	err atomic.Pointer[error]
}

func (s *readySource) Ready(context.Context) error {
	if p := s.err.Load(); p != nil {
		return *p
	}
	return nil
}

type readySink struct {
	pacertest.Sink
	err error
}

func (s *readySink) Ready(context.Context) error { return s.err }

// Engine.Ready is "running" plus every part that implements
// ReadyChecker; parts that do not are taken as ready.
func TestEngineReadyAsksSourceAndSink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := pacertest.NewSource(nil)
		inner.Hold = true
		src := &readySource{Source: inner}
		sink := &readySink{}
		e, err := pacer.New(pacer.Config{Source: src, Sink: sink})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Ready(context.Background()); err == nil || !strings.Contains(err.Error(), "idle") {
			t.Errorf("Ready before Run = %v, want engine is idle", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- e.Run(ctx) }()
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if err := e.Ready(context.Background()); err != nil {
			t.Errorf("Ready while running with ready parts = %v", err)
		}
		down := errors.New("nats: status RECONNECTING")
		src.err.Store(&down)
		sink.err = errors.New("last request: connection refused")
		err = e.Ready(context.Background())
		if !errors.Is(err, down) || !strings.Contains(err.Error(), "source: ") || !strings.Contains(err.Error(), "sink: last request") {
			t.Errorf("Ready with both down = %v, want both named", err)
		}
		cancel()
		<-done
	})
}
