package httpsink

import (
	"context"
	"fmt"

	"github.com/pacer-dev/pacer/pacer"
)

var _ pacer.ReadyChecker = (*Sink)(nil)

// Ready implements pacer.ReadyChecker from the latest request's outcome,
// without a request of its own (a probe must not spend the API's rate
// limit): not ready while the latest request got no answer at all
// (connection refused, reset, DNS, timeout); ready before the first request
// and once any answer comes back, whatever its status (a 429 or 503 is the
// API answering; the engine backs off).
func (s *Sink) Ready(context.Context) error {
	if p := s.down.Load(); p != nil {
		return fmt.Errorf("latest request got no answer: %w", *p)
	}
	return nil
}
