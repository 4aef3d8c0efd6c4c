package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// healthcheckCmd probes a worker's admin listener, for container health
// checks in images without a shell or curl (distroless).
type healthcheckCmd struct {
	Addr    string        `default:"127.0.0.1:8484" placeholder:"HOST:PORT" help:"Admin listener to probe (host:port or a URL)."`
	Path    string        `default:"/readyz" help:"Endpoint: /readyz (ready to work) or /healthz (alive)."`
	Timeout time.Duration `default:"3s" help:"Give up after this long."`
}

// Run exits 0 when the endpoint answers 200, 1 otherwise (printing why).
func (h healthcheckCmd) Run(e *env) error {
	url := adminURL(h.Addr) + "/" + strings.TrimPrefix(h.Path, "/")
	ctx, cancel := context.WithTimeout(e.ctx, h.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return usageErr("healthcheck: %v", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return &exitError{code: exitFailure, err: fmt.Errorf("healthcheck: %w", err)}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	msg := strings.TrimSpace(string(body))
	if resp.StatusCode != http.StatusOK {
		return &exitError{code: exitFailure, err: fmt.Errorf("healthcheck: %s: %s: %s", url, resp.Status, msg)}
	}
	fmt.Fprintln(e.stdout, msg)
	return nil
}

// adminURL turns "host:port", ":port" or a URL into a base URL without a
// trailing slash.
func adminURL(addr string) string {
	addr = strings.TrimRight(addr, "/")
	if strings.HasPrefix(addr, "http://") || strings.HasPrefix(addr, "https://") {
		return addr
	}
	if strings.HasPrefix(addr, ":") || strings.HasPrefix(addr, "0.0.0.0:") {
		addr = "127.0.0.1:" + addr[strings.LastIndex(addr, ":")+1:]
	}
	return "http://" + addr
}
