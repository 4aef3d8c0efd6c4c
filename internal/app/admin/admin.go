// Package admin is pacer's admin HTTP listener: /metrics (Prometheus, from
// the engine's own registry), /healthz, /readyz, /status (a JSON snapshot),
// a small status page with a live chart (/, plain HTML and JS embedded in
// the binary), and PUT /rate to change the sustained rate at runtime.
//
// It depends on small functions rather than the engine type, so any
// snapshot that encodes to JSON can be served. PUT /rate is off unless a
// bearer token is configured; the token is compared in constant time and is
// never logged.
//
// NewServer serves a handler with bounds on what clients can hold (header,
// read, write and idle timeouts, header bytes, a connection cap that closes
// the idlest connection first): see Limits.
package admin

import (
	"context"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pacer-dev/pacer/algorithms"
)

//go:embed static
var static embed.FS

// Config wires the handler to the engine. Every field is optional.
type Config struct {
	// Status returns a JSON-encodable snapshot for /status. It must never
	// contain secrets. nil: /status serves {}.
	Status func() any
	// Ready reports whether the worker can do its job (source connected,
	// sink reachable); nil: always ready once the handler exists.
	Ready func(ctx context.Context) error
	// Gatherer is the registry /metrics exposes (the engine's own, never
	// the global default). nil: /metrics answers 404.
	Gatherer prometheus.Gatherer
	// SetRate changes the sustained rate (Engine.SetRate).
	SetRate func(algorithms.Rate) error
	// ClearPause lifts a pause the downstream imposed (Retry-After, a
	// spent rate-limit window) and reports whether one was in force
	// (Engine.ClearPause). POST /resume calls it, with the same token as
	// PUT /rate; nil: 404.
	ClearPause func() bool
	// ResetBreaker closes an open systemic-failure breaker and reports
	// whether it was open (Engine.ResetBreaker). POST /resume calls it too.
	ResetBreaker func() bool
	// Token is the bearer token PUT /rate and POST /resume require. Empty,
	// or SetRate nil: PUT /rate answers 404 (off); likewise POST /resume.
	Token string
	// Logger records rate changes and refused attempts (nil: discard).
	Logger *slog.Logger
}

// Handler serves the admin endpoints. Safe for concurrent use.
type Handler struct {
	cfg Config
	mux *http.ServeMux
}

var _ http.Handler = (*Handler)(nil)

// New returns the admin handler for cfg.
func New(cfg Config) *Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{cfg: cfg, mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		text(w, http.StatusOK, "ok")
	})
	h.mux.HandleFunc("GET /readyz", h.readyz)
	h.mux.HandleFunc("GET /status", h.status)
	h.mux.HandleFunc("PUT /rate", h.putRate)
	h.mux.HandleFunc("POST /rate", h.putRate)
	h.mux.HandleFunc("POST /resume", h.resume)
	if cfg.Gatherer != nil {
		h.mux.Handle("GET /metrics", promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{EnableOpenMetrics: true})) // OpenMetrics when asked: exemplars
	} else {
		h.mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
			text(w, http.StatusNotFound, "no metrics registry configured")
		})
	}
	h.mux.HandleFunc("GET /{$}", h.page)
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	h.mux.ServeHTTP(w, r)
}

func text(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, msg+"\n")
}

func (h *Handler) readyz(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := h.cfg.Ready(ctx); err != nil {
			text(w, http.StatusServiceUnavailable, "not ready: "+err.Error())
			return
		}
	}
	text(w, http.StatusOK, "ready")
}

func (h *Handler) status(w http.ResponseWriter, r *http.Request) {
	var v any = struct{}{}
	if h.cfg.Status != nil {
		v = h.cfg.Status()
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		text(w, http.StatusInternalServerError, "status: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(append(b, '\n'))
}

func (h *Handler) page(w http.ResponseWriter, r *http.Request) {
	b, err := static.ReadFile("static/index.html")
	if err != nil {
		text(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")
	_, _ = w.Write(b)
}

// ErrRateOff is reported when PUT /rate is not enabled.
var ErrRateOff = errors.New("admin: PUT /rate is off (no token configured)")

// authorized reports whether r carries the configured bearer token,
// compared in constant time.
func (h *Handler) authorized(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(h.cfg.Token)) == 1
}

// putRate: PUT /rate with body "100/s" or {"rate":"100/s"} and
// "Authorization: Bearer TOKEN".
func (h *Handler) putRate(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Token == "" || h.cfg.SetRate == nil {
		text(w, http.StatusNotFound, ErrRateOff.Error())
		return
	}
	if !h.authorized(r) {
		h.cfg.Logger.Warn("admin: refused a rate change: missing or wrong bearer token", "remote", r.RemoteAddr)
		w.Header().Set("WWW-Authenticate", `Bearer realm="pacer"`)
		text(w, http.StatusUnauthorized, "unauthorized")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 4096))
	if err != nil {
		text(w, http.StatusBadRequest, err.Error())
		return
	}
	s := strings.TrimSpace(string(body))
	if strings.HasPrefix(s, "{") {
		var req struct {
			Rate string `json:"rate"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			text(w, http.StatusBadRequest, "want {\"rate\":\"100/s\"} or a plain rate: "+err.Error())
			return
		}
		s = req.Rate
	}
	rate, err := algorithms.ParseRate(s)
	if err != nil {
		text(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := h.cfg.SetRate(rate); err != nil {
		text(w, http.StatusUnprocessableEntity, err.Error())
		return
	}
	h.cfg.Logger.Info("admin: rate changed", "rate", rate.String(), "remote", r.RemoteAddr)
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, "{\"rate\":%q,\"per_second\":%g}\n", rate.String(), rate.PerSecond())
}

// resume: POST /resume with "Authorization: Bearer TOKEN" lifts a pause
// the downstream imposed and closes an open systemic-failure breaker; it
// answers {"cleared":true|false,"pause":...,"breaker":...}: cleared is
// true when either was in force.
func (h *Handler) resume(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Token == "" || h.cfg.ClearPause == nil && h.cfg.ResetBreaker == nil {
		text(w, http.StatusNotFound, "admin: POST /resume is off (no token configured)")
		return
	}
	if !h.authorized(r) {
		h.cfg.Logger.Warn("admin: refused a resume: missing or wrong bearer token", "remote", r.RemoteAddr)
		w.Header().Set("WWW-Authenticate", `Bearer realm="pacer"`)
		text(w, http.StatusUnauthorized, "unauthorized")
		return
	}
	var pause, brk bool
	if h.cfg.ClearPause != nil {
		pause = h.cfg.ClearPause()
	}
	if h.cfg.ResetBreaker != nil {
		brk = h.cfg.ResetBreaker()
	}
	h.cfg.Logger.Info("admin: resume", "pause_cleared", pause, "breaker_reset", brk, "remote", r.RemoteAddr)
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, "{\"cleared\":%t,\"pause\":%t,\"breaker\":%t}\n", pause || brk, pause, brk)
}
