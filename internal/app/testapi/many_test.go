package testapi

import (
	"net/http"
	"strings"
	"testing"
)

// Each API of a Many limits and records only its own requests.
func TestManyKeepsEachAPIApart(t *testing.T) {
	m := NewMany(map[string]Config{"a": {Rate: 1, Burst: 1}, "b": {Rate: 1, Burst: 2}})
	defer m.Close()
	codes := func(name string, n int) []int {
		var out []int
		for range n {
			resp, err := http.Post(m.URL(name)+"/hook", "application/json", strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			out = append(out, resp.StatusCode)
		}
		return out
	}
	if got := codes("a", 2); got[0] != 200 || got[1] != 429 {
		t.Fatalf("a: %v, want 200 then 429 (burst 1)", got)
	}
	if got := codes("b", 2); got[0] != 200 || got[1] != 200 {
		t.Fatalf("b: %v, want two 200s: a's requests do not count against b", got)
	}
	if a, b := m.API("a").Stats(), m.API("b").Stats(); a.Accepted != 1 || a.Throttled != 1 || b.Accepted != 2 || b.Throttled != 0 {
		t.Fatalf("stats a %+v b %+v", a, b)
	}
	resp, err := http.Get(m.URL("nope"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("unknown API: %d, want 404", resp.StatusCode)
	}
	if got := strings.Join(m.Names(), ","); got != "a,b" {
		t.Fatalf("Names = %s", got)
	}
}
