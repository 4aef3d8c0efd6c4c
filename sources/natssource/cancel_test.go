package natssource_test

import (
	"context"
	"testing"

	"github.com/pacer-dev/pacer/internal/testsupport/testenv"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sources/natssource"
)

// TestCancelledWhileStartingPerSubject: with tenant_in_subject, ctx ending
// before Run looks up the stream and creates the tenants' consumers is a
// clean stop too: Run returns ctx's error itself (it returned "nats:
// stream X: context canceled", which the engine took for a fatal error). The
// single-consumer path is covered by the conformance suite
// (CancelledWhileStarting).
func TestCancelledWhileStartingPerSubject(t *testing.T) {
	url := testenv.NATS(t)
	_, js := connect(t, url)
	name := testenv.UniqueName(t, "CANC")
	stream(t, js, name)
	publishN(t, js, name+".a.job", 0, 2)
	s := newSource(t, natssource.Config{Conn: natssource.Conn{URL: url}, Stream: name, Consumer: "c", Create: true,
		FilterSubject: name + ".*.>", SubjectToken: 2})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Run(ctx, func(context.Context, *pacer.Message) error { return nil }); err != nil && err != ctx.Err() {
		t.Errorf("Run cancelled before it started returned %q, want nil or ctx's error itself", err)
	}
}
