package testapi

import (
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
)

// Many is one server hosting many APIs, each under its own path prefix
// /<name>/ with its own Config (limit, dialect, latency, failures): the
// destinations of a test that paces many APIs at once. Each API counts,
// limits and records only its own requests.
type Many struct {
	srv  *httptest.Server
	apis map[string]*API
}

// NewMany starts a server on a free 127.0.0.1 port with one API per entry
// of cfgs. A request to a path whose first segment names no API gets 404.
func NewMany(cfgs map[string]Config) *Many {
	m := &Many{apis: make(map[string]*API, len(cfgs))}
	for name, cfg := range cfgs {
		m.apis[name] = NewHandler(cfg)
	}
	m.srv = httptest.NewServer(m)
	return m
}

// ServeHTTP hands the request to the API its first path segment names.
func (m *Many) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	a := m.apis[name]
	if a == nil {
		http.NotFound(w, r)
		return
	}
	a.ServeHTTP(w, r)
}

// URL is the base URL of the API called name (requests go to URL(name) +
// any path).
func (m *Many) URL(name string) string { return m.srv.URL + "/" + name }

// API is the API called name (nil if none).
func (m *Many) API(name string) *API { return m.apis[name] }

// Names lists the APIs, sorted.
func (m *Many) Names() []string {
	out := make([]string, 0, len(m.apis))
	for n := range m.apis {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Close releases hanging requests of every API and shuts the server down.
func (m *Many) Close() {
	for _, a := range m.apis {
		a.Close()
	}
	m.srv.CloseClientConnections()
	m.srv.Close()
}
