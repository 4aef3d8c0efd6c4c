package config

import (
	"fmt"
	"strings"
	"testing"
)

// aliasBomb is a config whose list of n aliases each names a mapping of k
// keys: n*k nodes to decode from n+k lines.
func aliasBomb(n, k int) string {
	var b strings.Builder
	b.WriteString("x-q: &q\n")
	for i := range k {
		fmt.Fprintf(&b, "  k%d: v\n", i)
	}
	b.WriteString(strings.Replace(minimal, "rate: 100/s\n", "rate: 100/s\n  quotas:\n"+strings.Repeat("    - *q\n", n), 1))
	return b.String()
}

// TestAliasExpansionCapped: a list of 1,000 aliases of a 1,000-key mapping
// (a million nodes and problems from 2,000 lines; it took tens of seconds)
// is refused with one problem at the alias that passes MaxAliasNodes; a
// list of 1,000 aliases of one small mapping still decodes.
func TestAliasExpansionCapped(t *testing.T) {
	ps := problemsOf(t, aliasBomb(1000, 1000), nil)
	found := false
	for _, p := range ps {
		if strings.Contains(p.Msg, fmt.Sprintf("aliases expand to more than %d YAML nodes", MaxAliasNodes)) && p.Line > 1000 {
			found = true
		}
	}
	if !found || len(ps) > MaxAliasNodes {
		t.Errorf("%d problems, want at most %d and one saying the aliases expand past the cap at its line; first: %v", len(ps), MaxAliasNodes, ps[:min(3, len(ps))])
	}
	text := "x-q: &q {name: q, limit: 10/s}\n" + strings.Replace(minimal, "rate: 100/s\n", "rate: 100/s\n  quotas:\n"+strings.Repeat("    - *q\n", 1000), 1)
	for _, p := range problemsOf(t, text, nil) {
		if strings.Contains(p.Msg, "aliases expand") {
			t.Errorf("1,000 aliases of a 2-field mapping refused: %v", p)
		}
	}
}
