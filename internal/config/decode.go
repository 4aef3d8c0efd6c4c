package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// Problem is one thing wrong with a configuration.
type Problem struct {
	Path   string // field path, "shaping.peak" ("" for the whole file)
	Line   int    // 1-based; 0 when the field is not in the file
	Column int
	Msg    string
}

func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", p.Line)
	}
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Problems is every problem found, in file order; it is an error.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return "config: " + strconv.Itoa(len(ps)) + " problem(s):\n  " + strings.Join(lines, "\n  ")
}

func (ps Problems) sort() {
	sort.SliceStable(ps, func(i, j int) bool {
		li, lj := ps[i].Line, ps[j].Line
		if li == 0 {
			li = 1 << 30
		}
		if lj == 0 {
			lj = 1 << 30
		}
		return li < lj
	})
}

// ErrConfig is wrapped by Load's file-reading errors.
var ErrConfig = errors.New("config")

// Load reads the file at path, expands ${ENV} from the process environment
// and parses it (see Parse).
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return Parse(data, os.LookupEnv)
}

// Parse expands ${ENV} with lookup (nil: no variables are set), decodes data
// strictly over Default() and validates the result. It returns the config and
// nil, or the config as far as it could be decoded and a Problems error
// listing every problem at once (unset variables, YAML syntax, unknown
// fields, wrong types, impossible combinations), each with line and path.
func Parse(data []byte, lookup func(string) (string, bool)) (*Config, error) {
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	cfg := Default()
	cfg.where = map[string]Pos{}
	text, probs := Expand(string(data), lookup)
	file, err := parser.ParseBytes([]byte(text), 0)
	if err != nil {
		probs = append(probs, syntaxProblem(err))
		probs.sort()
		return &cfg, probs
	}
	d := decoder{where: cfg.where, anchors: map[string]ast.Node{}}
	for _, doc := range file.Docs {
		if doc == nil || doc.Body == nil {
			continue // ast.FilterFile panics on an empty document
		}
		for _, n := range ast.Filter(ast.AnchorType, doc.Body) {
			if a, ok := n.(*ast.AnchorNode); ok && a.Name != nil {
				d.anchors[a.Name.String()] = a.Value
			}
		}
	}
	bad := map[string]bool{}
	for _, doc := range file.Docs {
		if doc == nil || doc.Body == nil {
			continue
		}
		d.walk(doc.Body, reflect.ValueOf(&cfg).Elem(), "")
	}
	if len(file.Docs) > 1 {
		d.add(file.Docs[1].Body, "", "only one YAML document is allowed")
	}
	for _, p := range d.probs {
		bad[p.Path] = true
	}
	probs = append(probs, d.probs...)
	for _, p := range cfg.Validate() {
		if !bad[p.Path] {
			probs = append(probs, p)
		}
	}
	if len(probs) > 0 {
		probs.sort()
		return &cfg, probs
	}
	return &cfg, nil
}

func syntaxProblem(err error) Problem {
	p := Problem{Msg: err.Error()}
	var ye yaml.Error
	if errors.As(err, &ye) {
		p.Msg = "YAML syntax: " + ye.GetMessage()
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			p.Line, p.Column = tk.Position.Line, tk.Position.Column
		}
	}
	return p
}

type decoder struct {
	where   map[string]Pos
	probs   Problems
	anchors map[string]ast.Node // &name -> node, for *name and <<: *name
	depth   int
}

func (d *decoder) add(n ast.Node, path, format string, args ...any) {
	p := Problem{Path: path, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		if tk := n.GetToken(); tk != nil && tk.Position != nil {
			p.Line, p.Column = tk.Position.Line, tk.Position.Column
		}
	}
	d.probs = append(d.probs, p)
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

var (
	interfaceUnmarshaler = reflect.TypeFor[yaml.InterfaceUnmarshaler]()
)

// walk decodes n into v, field by field, so that every unknown field and
// every wrong type is reported, not just the first.
func (d *decoder) walk(n ast.Node, v reflect.Value, path string) {
	d.depth++
	defer func() { d.depth-- }()
	if d.depth > 32 {
		d.add(n, path, "nested too deeply")
		return
	}
	n = d.unwrap(n)
	if n == nil || n.Type() == ast.NullType {
		return
	}
	t := v.Type()
	if reflect.PointerTo(t).Implements(interfaceUnmarshaler) || t.Kind() != reflect.Struct && t.Kind() != reflect.Slice {
		d.leaf(n, v, path)
		return
	}
	if t.Kind() == reflect.Slice {
		if t.Elem().Kind() != reflect.Struct {
			d.leaf(n, v, path)
			return
		}
		seq, ok := n.(*ast.SequenceNode)
		if !ok {
			d.add(n, path, "want a list, got %s", describe(n))
			return
		}
		s := reflect.MakeSlice(t, len(seq.Values), len(seq.Values))
		for i, item := range seq.Values {
			p := fmt.Sprintf("%s[%d]", path, i)
			d.mark(item, p)
			d.walk(item, s.Index(i), p)
		}
		v.Set(s)
		return
	}
	m, ok := n.(*ast.MappingNode)
	if !ok {
		d.add(n, path, "want a mapping of fields, got %s", describe(n))
		return
	}
	fields := fieldsOf(t)
	// Merge keys (<<: *base) first, so that explicit keys override them.
	for _, mv := range m.Values {
		if mv.Key.String() == "<<" {
			base := d.unwrap(mv.Value)
			if _, ok := base.(*ast.MappingNode); !ok {
				d.add(mv.Value, path, "<< wants an alias of a mapping, got %s", describe(base))
				continue
			}
			d.walk(base, v, path)
		}
	}
	for _, mv := range m.Values {
		if mv.Key.String() == "<<" {
			continue
		}
		key := mv.Key.String()
		if k, ok := unwrap(mv.Key).(*ast.StringNode); ok {
			key = k.Value
		}
		p := join(path, key)
		i, ok := fields[key]
		if !ok && path == "" && strings.HasPrefix(key, "x-") {
			continue // extension fields, a home for anchors (as in compose files)
		}
		if !ok {
			msg := fmt.Sprintf("unknown field %q", key)
			if s := suggest(key, fields); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			d.add(mv.Key, p, "%s", msg)
			continue
		}
		d.mark(mv.Key, p)
		d.walk(mv.Value, v.Field(i), p)
	}
}

func (d *decoder) mark(n ast.Node, path string) {
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		d.where[path] = Pos{Line: tk.Position.Line, Column: tk.Position.Column}
	}
}

func (d *decoder) leaf(n ast.Node, v reflect.Value, path string) {
	n = d.unwrap(n)
	tmp := reflect.New(v.Type())
	if err := yaml.NodeToValue(n, tmp.Interface()); err != nil {
		d.add(n, path, "%s", leafMessage(err, v.Type(), n))
		return
	}
	v.Set(tmp.Elem())
}

func leafMessage(err error, t reflect.Type, n ast.Node) string {
	// Errors from our own UnmarshalYAML methods say what they want.
	if reflect.PointerTo(t).Implements(interfaceUnmarshaler) {
		var ye yaml.Error
		if errors.As(err, &ye) {
			return ye.GetMessage()
		}
		msg := err.Error()
		if i := strings.Index(msg, "] "); strings.HasPrefix(msg, "[") && i > 0 {
			msg = msg[i+2:]
		}
		return msg
	}
	want := ""
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		want = "an integer"
	case reflect.Float64, reflect.Float32:
		want = "a number"
	case reflect.Bool:
		want = "true or false"
	case reflect.String:
		want = "a string"
	case reflect.Slice:
		want = "a list"
	case reflect.Map:
		want = "a mapping"
	default:
		return err.Error()
	}
	return fmt.Sprintf("want %s, got %s", want, describe(n))
}

func describe(n ast.Node) string {
	switch n.Type() {
	case ast.MappingType:
		return "a mapping"
	case ast.SequenceType:
		return "a list"
	case ast.NullType:
		return "nothing"
	}
	s := n.String()
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return strconv.Quote(s)
}

func unwrap(n ast.Node) ast.Node { return (*decoder)(nil).unwrap(n) }

// unwrap looks through tags, anchors and (with d's anchors) aliases.
func (d *decoder) unwrap(n ast.Node) ast.Node {
	for hops := 0; hops < 64; hops++ {
		switch x := n.(type) {
		case *ast.TagNode:
			n = x.Value
		case *ast.AnchorNode:
			n = x.Value
		case *ast.MappingKeyNode:
			n = x.Value
		case *ast.AliasNode:
			if d == nil || x.Value == nil {
				return n
			}
			target, ok := d.anchors[x.Value.String()]
			if !ok {
				return n
			}
			n = target
		default:
			return n
		}
	}
	return n
}

func fieldsOf(t reflect.Type) map[string]int {
	m := map[string]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		m[name] = i
	}
	return m
}

// suggest returns the known field closest to key, if it is close enough to
// be a typo.
func suggest(key string, fields map[string]int) string {
	best, bestD := "", 1<<30
	for name := range fields {
		dist := levenshtein(strings.ToLower(key), name)
		if dist < bestD || dist == bestD && name < best {
			best, bestD = name, dist
		}
	}
	if bestD <= 2 || bestD <= len(key)/3 {
		return best
	}
	return ""
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
