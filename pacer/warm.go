package pacer

import (
	"context"
	"time"
)

// Warmer is implemented by a Sink that can open its connections ahead of
// time (sinks/http pre-dials keep-alive connections). The engine calls Warm
// once when Run starts, before its first admission, bounded by WarmTimeout,
// so no admitted message waits for a connection to be set up: a request
// that waited while later ones went out on ready connections would reach
// the API bunched with them, outside the envelope the engine admitted.
// An error is logged and delivery starts anyway (requests dial on demand).
type Warmer interface {
	Warm(ctx context.Context) error
}

// WarmTimeout bounds Run's wait for a Warmer sink.
const WarmTimeout = 5 * time.Second

// warmSink lets a Warmer sink open its connections before the first
// admission.
func (e *Engine) warmSink(ctx context.Context) {
	w, ok := e.cfg.Sink.(Warmer)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, WarmTimeout)
	defer cancel()
	if err := w.Warm(ctx); err != nil {
		e.log.Warn("pacer: sink warm-up failed; delivering with connections opened on demand", "err", err)
	}
}
