package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/alecthomas/kong"
)

// TestReadmeDemoCommand runs the README's first command exactly as written,
// from the repository root: `go run ./cmd/pacer demo` (about 30 s).
func TestReadmeDemoCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the README's demo takes about 30 s")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	chart := filepath.Join(root, "pacer-demo.png")
	_, statErr := os.Stat(chart)
	existed := statErr == nil
	t.Cleanup(func() {
		if !existed {
			os.Remove(chart)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "run", "./cmd/pacer", "demo")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && strings.Contains(string(out), "not yet available") {
		t.Skipf("the engine does not support the demo's shaping yet: %s", strings.TrimSpace(string(out)))
	}
	if err != nil {
		t.Fatalf("go run ./cmd/pacer demo: %v\n%s", err, out)
	}
	for _, want := range []string{"│ lost", "yes (most admitted", "chart: " + chart} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(chart); err != nil {
		t.Errorf("chart: %v", err)
	}
}

// The documents whose commands, configs and links the tests below check:
// the README and the topic pages under docs/ (commands and configs), and
// with them the figures' pages (links).
func docPages(t *testing.T, root string) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join(root, "README.md")}, pages...)
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// fence is one fenced code block of a markdown file.
type fence struct {
	file string
	line int    // of the opening fence
	lang string // the info string: "yaml", "sh", ""
	text string
}

func fences(t *testing.T, path string) []fence {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []fence
	var cur *fence
	var body []string
	for i, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			cur = &fence{file: path, line: i + 1, lang: strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))}
			body = nil
		case cur != nil && trimmed == "```":
			cur.text = strings.Join(body, "\n") + "\n"
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			body = append(body, line)
		}
	}
	if cur != nil {
		t.Errorf("%s:%d: a code block is never closed", path, cur.line)
	}
	return out
}

// docCommand is one pacer command line shown in a code block.
type docCommand struct {
	where string
	args  []string // after "pacer"
}

// docCommands returns every command line of a code block that runs pacer:
// "pacer ...", "go run ./cmd/pacer ...", "./pacer-worker ...", with "\"
// continuations joined and a trailing "# comment" cut.
func docCommands(t *testing.T, f fence) []docCommand {
	t.Helper()
	if f.lang != "" && f.lang != "sh" && f.lang != "shell" && f.lang != "console" {
		return nil
	}
	var out []docCommand
	lines := strings.Split(f.text, "\n")
	for i := 0; i < len(lines); i++ {
		start := i
		line := strings.TrimPrefix(strings.TrimSpace(lines[i]), "$ ")
		for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, "\\") + " " + strings.TrimSpace(lines[i])
		}
		if k := strings.Index(line, " #"); k >= 0 {
			line = line[:k]
		}
		words := shellWords(line)
		var args []string
		switch {
		case len(words) >= 1 && (words[0] == "pacer" || words[0] == "./pacer-worker"):
			args = words[1:]
		case len(words) >= 3 && words[0] == "go" && words[1] == "run" && words[2] == "./cmd/pacer":
			args = words[3:]
		default:
			continue
		}
		out = append(out, docCommand{where: f.file + ":" + strconv.Itoa(f.line+1+start), args: args})
	}
	return out
}

// shellWords splits a command line on spaces, keeping quoted words whole.
func shellWords(s string) []string {
	var words []string
	var w strings.Builder
	var quote rune
	in := false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, w.String())
	}
	return words
}

// commandParser parses a command line as the pacer binary does, without
// running it.
func commandParser(t *testing.T) *kong.Kong {
	t.Helper()
	var c cli
	p, err := kong.New(&c, kong.Name("pacer"), kong.Writers(io.Discard, io.Discard), kong.Exit(func(int) {}))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// configArg returns the config file a command names (-c FILE, --config
// FILE or its FILE argument), or "".
func configArg(args []string) string {
	for i, a := range args {
		switch {
		case (a == "-c" || a == "--config") && i+1 < len(args):
			return args[i+1]
		case strings.HasPrefix(a, "--config="):
			return strings.TrimPrefix(a, "--config=")
		}
	}
	if len(args) == 2 && (args[0] == "validate" || args[0] == "run") && !strings.HasPrefix(args[1], "-") {
		return args[1]
	}
	return ""
}

// TestDocsCommands: every pacer command shown in a code block of the README
// or docs/*.md parses as the binary parses it (the command and its flags
// exist); the config file it names exists and validates; a simulate
// command runs (into a temporary directory instead of its --out).
// Commands with a placeholder (FILE, HOST:PORT) belong in prose or tables,
// not in code blocks.
func TestDocsCommands(t *testing.T) {
	root := repoRoot(t)
	t.Chdir(root) // the documents' paths are relative to the repository root
	n := 0
	for _, page := range docPages(t, root) {
		for _, f := range fences(t, page) {
			f.file, _ = filepath.Rel(root, f.file) // as the messages name it
			for _, c := range docCommands(t, f) {
				n++
				if _, err := commandParser(t).Parse(conventionalArgs(c.args)); err != nil {
					t.Errorf("%s: pacer %s: %v", c.where, strings.Join(c.args, " "), err)
					continue
				}
				// noEnv: every ${NAME} a document's config uses needs
				// its ${NAME:-default}.
				if path := configArg(c.args); path != "" {
					var out, errOut strings.Builder
					if code := run(context.Background(), []string{"validate", path}, &out, &errOut, noEnv); code != exitOK {
						t.Errorf("%s: pacer validate %s: exit %d\n%s%s", c.where, path, code, out.String(), errOut.String())
					}
				}
				if len(c.args) > 0 && c.args[0] == "simulate" {
					args := append([]string(nil), c.args...)
					for i := range args {
						if args[i] == "--out" && i+1 < len(args) {
							args[i+1] = t.TempDir()
						}
					}
					var out, errOut strings.Builder
					if code := run(context.Background(), args, &out, &errOut, noEnv); code != exitOK {
						t.Errorf("%s: pacer %s: exit %d\n%s%s", c.where, strings.Join(args, " "), code, out.String(), errOut.String())
					}
				}
			}
		}
	}
	if n < 5 {
		t.Errorf("found %d pacer commands in the documents' code blocks; the README alone shows more", n)
	}
	t.Logf("%d pacer commands checked", n)
}

// docBase completes a configuration block that shows only some sections:
// each top-level section the block leaves out is taken from here.
var docBase = []struct{ key, text string }{
	{"source", "source:\n  type: nats\n  nats:\n    stream: ORDERS\n"},
	{"shaping", "shaping:\n  rate: 100/s\n"},
	{"sink", "sink:\n  type: stdout\n"},
}

// TestDocsConfigs: every ```yaml block of the README and docs/*.md is a
// pacer configuration that `pacer validate` accepts, once the sections it
// leaves out (source, shaping, sink) are added from docBase. Only pacer
// configurations go in ```yaml blocks.
func TestDocsConfigs(t *testing.T) {
	root := repoRoot(t)
	dir := t.TempDir()
	n := 0
	for _, page := range docPages(t, root) {
		for _, f := range fences(t, page) {
			if f.lang != "yaml" {
				continue
			}
			n++
			text := f.text
			top := map[string]bool{}
			for _, line := range strings.Split(text, "\n") {
				if k, _, ok := strings.Cut(line, ":"); ok && line != "" && line[0] != ' ' && line[0] != '#' {
					top[k] = true
				}
			}
			for _, b := range docBase {
				if !top[b.key] {
					text += b.text
				}
			}
			rel, _ := filepath.Rel(root, f.file)
			path := filepath.Join(dir, strings.NewReplacer("/", "_", ".", "_").Replace(rel)+"_"+strconv.Itoa(f.line)+".yaml")
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			var out, errOut strings.Builder
			if code := run(context.Background(), []string{"validate", path}, &out, &errOut, noEnv); code != exitOK {
				t.Errorf("%s:%d: the yaml block does not validate (exit %d):\n%s%s\n%s", rel, f.line, code, out.String(), errOut.String(), text)
			}
		}
	}
	if n < 5 {
		t.Errorf("found %d yaml blocks in the documents; the README and docs/configuration.md alone show more", n)
	}
	t.Logf("%d yaml blocks validated", n)
}

// TestDocsLinks: every relative link of the README, docs/*.md and the
// figures' pages points to a file of the repository, and a link to a
// heading (page.md#heading) to a heading that page has.
func TestDocsLinks(t *testing.T) {
	root := repoRoot(t)
	pages := docPages(t, root)
	for _, p := range []string{"BENCHMARKS.md", "RELIABILITY.md", "CHANGELOG.md", "ARCHITECTURE.md"} {
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			pages = append(pages, filepath.Join(root, p))
		}
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, page)
		for i, line := range strings.Split(string(data), "\n") {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, anchor, _ := strings.Cut(target, "#")
				dest := page
				if file != "" {
					dest = filepath.Join(filepath.Dir(page), file)
				}
				if !strings.HasPrefix(dest, root+string(filepath.Separator)) && dest != root {
					t.Errorf("%s:%d: %s points outside the repository", rel, i+1, target)
					continue
				}
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s:%d: %s: %v", rel, i+1, target, err)
					continue
				}
				if anchor != "" && strings.HasSuffix(dest, ".md") && !headingAnchors(t, dest)[anchor] {
					t.Errorf("%s:%d: %s: no such heading in %s", rel, i+1, target, filepath.Base(dest))
				}
			}
		}
	}
}

// headingAnchors returns the anchors GitHub gives a markdown file's
// headings: lower case, punctuation dropped, spaces as hyphens, a repeated
// one numbered.
func headingAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
			}
		}
		a := b.String()
		if k := seen[a]; k > 0 {
			anchors[a+"-"+strconv.Itoa(k)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}
