package config

import (
	"os"
	"testing"

	"github.com/goccy/go-yaml"
)

// BenchmarkParse: pacer's Parse (per-value env expansion, field-by-field strict
// decoding with positions, Validate) against its peer, one strict
// goccy/go-yaml Unmarshal of the same file (stops at the first problem, no
// validation).
func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("testdata/good/full-kafka.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("pacer-Parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Parse(data, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("goccy-Unmarshal-strict", func(b *testing.B) {
		b.ReportAllocs()
		text := data
		for b.Loop() {
			c := Default()
			if err := yaml.UnmarshalWithOptions(text, &c, yaml.Strict()); err != nil {
				b.Fatal(err)
			}
		}
	})
}
