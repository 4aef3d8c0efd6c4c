package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeGoVersionMatchesGoMod: the Go version README.md asks for is
// the one go.mod requires.
func TestReadmeGoVersionMatchesGoMod(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range regexp.MustCompile(`Go \(?(1\.\d+(?:\.\d+)?)\+?`).FindAllSubmatch(readme, -1) {
		if string(line[1]) != string(m[1]) {
			t.Errorf("README.md says Go %s, go.mod says go %s", line[1], m[1])
		}
	}
}

// TestGitignoreCoversDemoFiles: what the demo writes in the working
// directory by default is ignored by git.
func TestGitignoreCoversDemoFiles(t *testing.T) {
	data, err := os.ReadFile("../../.gitignore")
	if err != nil {
		t.Fatal(err)
	}
	f, _ := reflect.TypeFor[demoCmd]().FieldByName("Chart")
	chart := f.Tag.Get("default")
	for _, name := range []string{chart, strings.TrimSuffix(chart, filepath.Ext(chart)) + ".svg"} {
		ignored := false
		for _, pat := range strings.Split(string(data), "\n") {
			pat = strings.TrimPrefix(strings.TrimSpace(pat), "/")
			if ok, _ := filepath.Match(pat, name); ok && pat != "" && !strings.HasPrefix(pat, "#") {
				ignored = true
			}
		}
		if !ignored {
			t.Errorf(".gitignore does not cover %s, which pacer demo writes", name)
		}
	}
}

// TestWorkerLinksNoDeveloperClients: the shipped worker does not link
// franz-go (a second Kafka client, used by the developer tools in
// cmd/pacer-dev and by tests only).
func TestWorkerLinksNoDeveloperClients(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/twmb/franz-go") {
			t.Errorf("cmd/pacer links %s; developer tools belong in cmd/pacer-dev", dep)
		}
	}
}
