package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// NATSImage is the image used when a Docker engine answers and
// PACER_TEST_NATS_URL is unset.
const NATSImage = "nats:2.11-alpine"

// NATSServer is a JetStream-enabled NATS server handed to a test. Only the
// in-process backend can be shut down and restarted (CanRestart), on the
// same port and with the same store. Its methods are safe for concurrent use.
type NATSServer struct {
	backend string
	url     string

	mu   sync.Mutex
	srv  *server.Server // nil while stopped, or for other backends
	opts *server.Options
}

// NATS returns the URL of a JetStream-enabled NATS server for t: from
// PACER_TEST_NATS_URL, else a container when Docker answers, else an
// in-process nats-server with JetStream in t.TempDir(). A shared server
// (the environment's) outlives the test: tests must use unique stream and
// consumer names (UniqueName) and delete them in t.Cleanup.
func NATS(t testing.TB) string {
	t.Helper()
	return StartNATS(t).URL()
}

// StartNATS is NATS returning a handle, for tests that cut the server.
func StartNATS(t testing.TB) *NATSServer {
	t.Helper()
	if env := os.Getenv("PACER_TEST_NATS_URL"); env != "" {
		logf(t, "NATS from PACER_TEST_NATS_URL=%s", env)
		return &NATSServer{backend: "env", url: env}
	}
	if ok, why := Docker(); ok {
		return startNATSContainer(t)
	} else {
		logf(t, "NATS: no container (%s); using in-process nats-server", why)
	}
	return StartNATSInProcess(t)
}

// StartNATSInProcess always starts an in-process nats-server, whatever the
// environment says: for tests that must shut the server down and restart it.
func StartNATSInProcess(t testing.TB) *NATSServer {
	t.Helper()
	opts := &server.Options{
		Host:      "127.0.0.1",
		Port:      server.RANDOM_PORT,
		JetStream: true,
		StoreDir:  t.TempDir(),
		NoLog:     true,
		NoSigs:    true,
		// Small limits keep an in-process server light.
		JetStreamMaxMemory: 256 << 20,
		JetStreamMaxStore:  1 << 30,
	}
	s, err := startNATSServer(opts)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	// Pin the port so Restart comes back on the same URL.
	opts.Port = s.Addr().(*net.TCPAddr).Port
	n := &NATSServer{backend: "in-process", url: s.ClientURL(), srv: s, opts: opts}
	logf(t, "NATS in-process nats-server at %s (store %s)", n.url, opts.StoreDir)
	t.Cleanup(n.Shutdown)
	return n
}

func startNATSServer(opts *server.Options) (*server.Server, error) {
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("nats-server: %w", err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return nil, fmt.Errorf("nats-server on port %d not ready within 10s", opts.Port)
	}
	return s, nil
}

func startNATSContainer(t testing.TB) *NATSServer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req := testcontainers.ContainerRequest{
		Image:        NATSImage,
		Cmd:          []string{"-js"},
		ExposedPorts: []string{"4222/tcp"},
		WaitingFor:   wait.ForListeningPort("4222/tcp"),
	}
	c, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{ContainerRequest: req, Started: true})
	if err != nil {
		t.Fatalf("testenv: NATS container %s: %v", NATSImage, err)
	}
	t.Cleanup(func() { _ = testcontainers.TerminateContainer(c) })
	ep, err := c.PortEndpoint(ctx, "4222/tcp", "nats")
	if err != nil {
		t.Fatalf("testenv: NATS container endpoint: %v", err)
	}
	logf(t, "NATS container %s at %s", NATSImage, ep)
	return &NATSServer{backend: "container", url: ep}
}

// URL is the client URL; it stays the same across Restart.
func (n *NATSServer) URL() string { return n.url }

// Backend is "env", "container" or "in-process".
func (n *NATSServer) Backend() string { return n.backend }

// CanRestart reports whether Shutdown and Restart work (in-process only).
func (n *NATSServer) CanRestart() bool { return n.backend == "in-process" }

// Shutdown stops the in-process server; its JetStream store stays for
// Restart. Idempotent; a no-op for the other backends.
func (n *NATSServer) Shutdown() {
	n.mu.Lock()
	s := n.srv
	n.srv = nil
	n.mu.Unlock()
	if s != nil {
		s.Shutdown()
		s.WaitForShutdown()
	}
}

// Restart starts the in-process server again on the same port with the
// same store (streams, consumers and their acknowledgement state), shutting
// it down first if it is running.
func (n *NATSServer) Restart() error {
	if !n.CanRestart() {
		return fmt.Errorf("testenv: NATS backend %q cannot be restarted", n.backend)
	}
	n.Shutdown()
	n.mu.Lock()
	defer n.mu.Unlock()
	var err error
	for i := 0; i < 50; i++ {
		o := n.opts.Clone()
		var s *server.Server
		if s, err = startNATSServer(o); err == nil {
			n.srv = s
			return nil
		}
		time.Sleep(20 * time.Millisecond) // waiting for the OS to free the port, not test logic
	}
	return fmt.Errorf("testenv: restart nats-server on port %d: %w", n.opts.Port, err)
}
