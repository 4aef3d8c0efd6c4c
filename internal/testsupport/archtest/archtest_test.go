package archtest

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/pacer-dev/pacer"

// rule is one row of ARCHITECTURE.md's package table.
type rule struct {
	pkgs  []string // the packages of the row
	may   []string // the packages of pacer's they may import
	below bool     // "anything below": any package of a later row
}

var ticked = regexp.MustCompile("`([^`]+)`")

// readRules parses the table under "## Packages" in ARCHITECTURE.md.
func readRules(t *testing.T, path string) []rule {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rules []rule
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == "## Packages"
			continue
		case !in || !strings.HasPrefix(line, "| `"):
			continue
		}
		cols := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cols) != 3 {
			t.Fatalf("%s: package row with %d columns, want 3: %q", path, len(cols), line)
		}
		var r rule
		for _, m := range ticked.FindAllStringSubmatch(cols[0], -1) {
			r.pkgs = append(r.pkgs, m[1])
		}
		may := strings.TrimSpace(cols[2])
		switch {
		case may == "anything below":
			r.below = true
		case strings.HasPrefix(may, "nothing"):
		default:
			for _, m := range ticked.FindAllStringSubmatch(may, -1) {
				r.may = append(r.may, m[1])
			}
			if len(r.may) == 0 {
				t.Fatalf("%s: cannot read the imports allowed to %v: %q", path, r.pkgs, may)
			}
		}
		rules = append(rules, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rules) == 0 {
		t.Fatalf("%s: no package table under \"## Packages\"", path)
	}
	return rules
}

// TestLayering checks every package's non-test imports against
// ARCHITECTURE.md, so the document and the code cannot drift apart: a new
// package, or an import its row does not allow, fails here with the fix.
func TestLayering(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	rules := readRules(t, filepath.Join(root, "ARCHITECTURE.md"))
	allowed := map[string][]string{}
	for i, r := range rules {
		may := r.may
		if r.below {
			for _, later := range rules[i+1:] {
				may = append(may, later.pkgs...)
			}
		}
		for _, p := range r.pkgs {
			if _, dup := allowed[p]; dup {
				t.Errorf("ARCHITECTURE.md: %s is in two rows", p)
			}
			allowed[p] = may
		}
	}

	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("go list needs the go command and the module cache: %v", err)
	}
	seen := map[string]bool{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(f[0], module), "/")
		seen[pkg] = true
		may, ok := allowed[pkg]
		if !ok {
			t.Errorf("%s is not in ARCHITECTURE.md's package table: add a row saying what it owns and what it may import", pkg)
			continue
		}
		for _, imp := range f[1:] {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			dep := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
			if !slices.Contains(may, dep) {
				t.Errorf("%s imports %s, which its row in ARCHITECTURE.md does not allow (allowed: %v)", pkg, dep, may)
			}
		}
	}
	for p := range allowed {
		if !seen[p] {
			t.Errorf("ARCHITECTURE.md lists %s, which is not a package of the module", p)
		}
	}
}
