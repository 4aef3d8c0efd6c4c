package main

import (
	"testing"
)

func TestAdminURL(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:9090":         "http://127.0.0.1:9090",
		":9090":                  "http://127.0.0.1:9090",
		"0.0.0.0:9090":           "http://127.0.0.1:9090",
		"http://pacer:9090/":     "http://pacer:9090",
		"https://x.example:8443": "https://x.example:8443",
	} {
		if got := adminURL(in); got != want {
			t.Errorf("adminURL(%q) = %q want %q", in, got, want)
		}
	}
}
