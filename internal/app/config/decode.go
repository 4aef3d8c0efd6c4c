package config

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
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

// Sort orders ps by line (problems without a line last), keeping the order
// of problems on the same line.
func (ps Problems) Sort() { ps.sort() }

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

// Limits on a configuration file. A real one is a few kilobytes; the YAML
// parser's time grows with the square of a mapping's size, so a huge file
// is refused before it is parsed.
const (
	// MaxFileBytes bounds the file's size.
	MaxFileBytes = 256 << 10
	// MaxTokens bounds the YAML tokens (keys, values, indicators) of a file.
	MaxTokens = 20000
	// MaxAliasNodes bounds the YAML nodes decoded through aliases (*name,
	// <<: *name), each alias counting the nodes of what it names: aliases
	// of aliases multiply, so a small file could otherwise expand to
	// millions of nodes. A config that shares a TLS block or a list of
	// brokers stays far below it.
	MaxAliasNodes = 20000
)

// Load reads the file at path (see ReadFile) and parses it (see Parse)
// with the process environment.
func Load(path string) (*Config, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, os.LookupEnv)
}

// Parse decodes data strictly over Default(), expanding ${ENV} in each
// scalar value with lookup (nil: no variables are set), and validates the
// result. It returns the config and nil, or the config as far as it could
// be decoded and a Problems error listing every problem at once (unset
// variables, YAML syntax, unknown fields, wrong types, impossible
// combinations), each with line and path.
//
// A value reaches its field exactly as written: a string field takes
// 0123, 0x10, 1_000, True or ~ as that text; an integer field refuses a
// fraction; a leading UTF-8 byte-order mark is ignored.
func Parse(data []byte, lookup func(string) (string, bool)) (*Config, error) {
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	cfg := Default()
	cfg.where = map[string]Pos{}
	if p, ok := tooLarge(data); !ok {
		return &cfg, Problems{p}
	}
	data = bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF"))
	cfg.secretLines = scanSecretLines(data)
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return &cfg, Problems{syntaxProblem(err, data)}
	}
	d := decoder{where: cfg.where, anchors: map[string]ast.Node{}, env: expander{lookup: lookup}, unset: map[string]int{},
		lines: strings.Split(string(data), "\n")}
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
	cfg.hints = d.hints
	cfg.readLegacyZeros()
	for _, p := range d.probs {
		bad[p.Path] = true
	}
	for _, p := range d.unsetAt {
		bad[p] = true
	}
	probs := d.probs
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

// tooLarge checks the size limits before the file is parsed.
func tooLarge(data []byte) (Problem, bool) {
	if len(data) > MaxFileBytes {
		return Problem{Msg: fmt.Sprintf("the file is %d bytes; a config may hold at most %d (%d KiB)", len(data), MaxFileBytes, MaxFileBytes>>10)}, false
	}
	if n := len(lexer.Tokenize(string(data))); n > MaxTokens {
		return Problem{Msg: fmt.Sprintf("the file holds %d YAML tokens (keys, values, indicators); a config may hold at most %d", n, MaxTokens)}, false
	}
	return Problem{}, true
}

func syntaxProblem(err error, data []byte) Problem {
	p := Problem{Msg: err.Error()}
	var ye yaml.Error
	if errors.As(err, &ye) {
		p.Msg = "YAML syntax: " + ye.GetMessage()
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			p.Line, p.Column = tk.Position.Line, tk.Position.Column
		}
	}
	if lines := strings.Split(string(data), "\n"); p.Line > 0 && p.Line <= len(lines) {
		if l := lines[p.Line-1]; strings.Contains(l, "[${") || strings.Contains(l, "{${") {
			p.Msg += " (variables are expanded after the YAML is read, so [${X}] is a mapping inside a list: write field: ${X} for a comma-separated list, or quote it: [\"${X}\"])"
		}
	}
	return p
}

type decoder struct {
	where   map[string]Pos
	probs   Problems
	anchors map[string]ast.Node // &name -> node, for *name and <<: *name
	depth   int
	env     expander
	// unset maps an unset variable to its problem's index in probs: each
	// is reported once, with every line that needs it.
	unset map[string]int
	// unsetAt lists the fields left at their defaults for want of a
	// variable: Validate's complaints about them would only repeat it.
	unsetAt []string
	// lines is the file's text by line, to see what follows a value.
	lines []string
	// hints are warnings found while decoding (see commentCut).
	hints Problems
	// aliasNodes counts the nodes reached through aliases (see
	// MaxAliasNodes); sizes caches each anchor's node count. Past the cap,
	// over is set and the decoding stops.
	aliasNodes int
	sizes      map[ast.Node]int
	over       bool
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
	if d.over {
		return
	}
	if d.depth > 32 {
		d.add(n, path, "nested too deeply")
		return
	}
	n = d.unwrap(n)
	if n == nil {
		return
	}
	t := v.Type()
	if reflect.PointerTo(t).Implements(interfaceUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) ||
		t.Kind() != reflect.Struct && t.Kind() != reflect.Slice || t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Struct {
		d.leaf(n, v, path)
		return
	}
	if n.Type() == ast.NullType {
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

// leaf decodes a value that is not a struct of fields: a scalar, a list
// of scalars, or a mapping of names to scalars or to settings blocks.
func (d *decoder) leaf(n ast.Node, v reflect.Value, path string) {
	n = d.unwrap(n)
	if n == nil || d.over {
		return
	}
	t := v.Type()
	if reflect.PointerTo(t).Implements(interfaceUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		d.scalar(n, v, path)
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		if _, null, _ := scalarText(n); null {
			return
		}
		p := reflect.New(t.Elem())
		before := len(d.probs)
		d.leaf(n, p.Elem(), path)
		if len(d.probs) == before {
			v.Set(p)
		}
	case reflect.Slice:
		seq, ok := n.(*ast.SequenceNode)
		if !ok {
			text, null, scalar := scalarText(n)
			if null {
				return
			}
			if scalar && t.Elem().Kind() == reflect.String {
				d.commaList(n, v, path, text)
				return
			}
			d.add(n, path, "want a list, got %s", describe(n))
			return
		}
		s := reflect.MakeSlice(t, len(seq.Values), len(seq.Values))
		for i, item := range seq.Values {
			p := fmt.Sprintf("%s[%d]", path, i)
			d.mark(item, p)
			if text, ok := flowPair(d.unwrap(item)); ok && t.Elem().Kind() == reflect.String {
				// goccy/go-yaml reads [a:9092] inside a flow mapping as
				// the pair a: 9092; YAML reads a plain scalar.
				d.setText(item, s.Index(i), p, text)
				continue
			}
			d.leaf(item, s.Index(i), p)
		}
		v.Set(s)
	case reflect.Map:
		m, ok := n.(*ast.MappingNode)
		if !ok {
			if _, null, _ := scalarText(n); null {
				return
			}
			d.add(n, path, "want a mapping of names to values, got %s", describe(n))
			return
		}
		out := reflect.MakeMapWithSize(t, len(m.Values))
		for _, mv := range m.Values {
			key, _, ok := scalarText(d.unwrap(mv.Key))
			if !ok {
				d.add(mv.Key, path, "want a name as key, got %s", describe(d.unwrap(mv.Key)))
				continue
			}
			p := join(path, key)
			d.mark(mv.Key, p)
			ev := reflect.New(t.Elem()).Elem()
			before := len(d.probs)
			if t.Elem().Kind() == reflect.Struct {
				d.walk(mv.Value, ev, p) // a mapping of names to settings blocks
			} else {
				d.leaf(mv.Value, ev, p)
			}
			if len(d.probs) == before {
				out.SetMapIndex(reflect.ValueOf(key).Convert(t.Key()), ev)
			}
		}
		v.Set(out)
	default:
		d.scalar(n, v, path)
	}
}

// commaList decodes a scalar given for a list of strings as a
// comma-separated list ("a:9092,b:9092"), after expanding its variables:
// the way to fill a list from one environment variable.
func (d *decoder) commaList(n ast.Node, v reflect.Value, path, text string) {
	var s string
	d.setText(n, reflect.ValueOf(&s).Elem(), path, text)
	var items []string
	for _, it := range strings.Split(s, ",") {
		if it = strings.TrimSpace(it); it != "" {
			items = append(items, it)
		}
	}
	out := reflect.MakeSlice(v.Type(), len(items), len(items))
	for i, it := range items {
		out.Index(i).SetString(it)
	}
	v.Set(out)
}

// scalar decodes one scalar value into v, after expanding its variables.
func (d *decoder) scalar(n ast.Node, v reflect.Value, path string) {
	text, null, ok := scalarText(n)
	if !ok {
		d.add(n, path, "want %s, got %s", want(v.Type()), describe(n))
		return
	}
	if null || n.Type() == ast.NullType && v.Kind() != reflect.String && v.Type() != reflect.TypeFor[Secret]() {
		return // "field:" with nothing after it (or ~ where no text goes) keeps the default
	}
	d.commentCut(n, v, path, text)
	d.setText(n, v, path, text)
}

// commentCut warns when an unquoted value of a text field is followed on
// its line by a comment that may have been meant as part of it: YAML ends
// a plain value at " #", so `password: hunter2 #tail` sets "hunter2" and
// nothing says so. For a secret field any such comment is suspect (and
// neither the value nor the comment is printed); for another string field,
// a comment glued to its first word (`stream: EVENTS #prod`) is, while the
// usual `value  # explanation` is not. A value that is one ${VAR} gets the
// variable's text whole, so its comment is a comment.
func (d *decoder) commentCut(n ast.Node, v reflect.Value, path, text string) {
	secret := v.Type() == reflect.TypeFor[Secret]()
	if !secret && v.Kind() != reflect.String {
		return
	}
	tk := n.GetToken()
	if tk == nil || tk.Position == nil || tk.Type == token.SingleQuoteType || tk.Type == token.DoubleQuoteType {
		return
	}
	if _, literal := n.(*ast.LiteralNode); literal || text == "" || wholeVariable.MatchString(text) {
		return
	}
	line, col := tk.Position.Line, tk.Position.Column
	if line < 1 || line > len(d.lines) {
		return
	}
	runes := []rune(d.lines[line-1])
	if col < 1 || col > len(runes) {
		return
	}
	rest, ok := strings.CutPrefix(string(runes[col-1:]), text)
	if !ok {
		return // not a one-line plain value (a flow list, a folded scalar)
	}
	m := trailingComment.FindStringSubmatch(rest)
	if m == nil {
		return
	}
	glued := m[1] != "" && m[1][0] != ' ' && m[1][0] != '\t' && m[1][0] != '#'
	switch {
	case secret:
		d.hint(n, path, "a comment follows this secret on its line: YAML ends an unquoted value at \" #\", so everything from the \"#\" on is dropped from the secret; if it is part of the value, quote the whole value ('...')")
	case glued:
		d.hint(n, path, "the value is %q: YAML ends an unquoted value at \" #\", so %q is a comment; if it is part of the value, quote the whole value ('%s #%s')", text, "#"+m[1], text, m[1])
	}
}

var (
	wholeVariable   = regexp.MustCompile(`^\$\{[^}]*\}$`)
	trailingComment = regexp.MustCompile(`^[ \t]+#(.*)$`)
)

func (d *decoder) hint(n ast.Node, path, format string, args ...any) {
	p := Problem{Path: path, Msg: fmt.Sprintf(format, args...)}
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		p.Line, p.Column = tk.Position.Line, tk.Position.Column
	}
	d.hints = append(d.hints, p)
}

// setText expands text's variables and stores it into v as v's type reads
// it.
func (d *decoder) setText(n ast.Node, v reflect.Value, path, text string) {
	text, unset, err := d.env.expand(text)
	if err != nil {
		d.add(n, path, "%v", err)
		return
	}
	if len(unset) > 0 {
		for _, name := range unset {
			d.missing(n, path, name)
		}
		return
	}
	if err := setScalar(v, text); err != nil {
		d.add(n, path, "%v", err)
	}
}

// missing reports the unset variable name once, adding the lines of its
// later uses to the first report.
func (d *decoder) missing(n ast.Node, path, name string) {
	line := 0
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		line = tk.Position.Line
	}
	d.unsetAt = append(d.unsetAt, path)
	if i, ok := d.unset[name]; ok {
		p := &d.probs[i]
		if line > 0 {
			p.Msg = strings.TrimSuffix(p.Msg, ")")
			if !strings.Contains(p.Msg, "; also used on line") {
				p.Msg += "; also used on line"
			} else {
				p.Msg += ","
			}
			p.Msg += fmt.Sprintf(" %d)", line)
		}
		return
	}
	d.unset[name] = len(d.probs)
	d.add(n, path, "environment variable %s is not set (write ${%s:-default} to give a default)", name, name)
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// setScalar stores text into v: exactly, for a string; as a whole number,
// a number or true/false, for those kinds; through the type's own
// UnmarshalYAML or UnmarshalText otherwise.
func setScalar(v reflect.Value, text string) error {
	t := v.Type()
	pt := reflect.PointerTo(t)
	switch {
	case pt.Implements(interfaceUnmarshaler):
		u := v.Addr().Interface().(yaml.InterfaceUnmarshaler)
		return u.UnmarshalYAML(func(dst any) error {
			if s, ok := dst.(*string); ok {
				*s = text
				return nil
			}
			return yaml.Unmarshal([]byte(text), dst)
		})
	case pt.Implements(textUnmarshaler):
		return v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(text))
	}
	switch t.Kind() {
	case reflect.String:
		v.SetString(text)
	case reflect.Bool:
		switch text {
		case "true", "True", "TRUE":
			v.SetBool(true)
		case "false", "False", "FALSE":
			v.SetBool(false)
		default:
			return fmt.Errorf("want true or false, got %q", text)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, err := strconv.ParseInt(text, 10, t.Bits())
		if err != nil {
			return intError(text, err, strconv.FormatInt(int64(1)<<(t.Bits()-1)-1, 10))
		}
		v.SetInt(i)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		u, err := strconv.ParseUint(text, 10, t.Bits())
		if err != nil {
			return intError(text, err, strconv.FormatUint(uint64(1)<<(t.Bits()-1)*2-1, 10))
		}
		v.SetUint(u)
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(text, t.Bits())
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("want a number, got %q", text)
		}
		v.SetFloat(f)
	default:
		return fmt.Errorf("want %s, got %q", want(t), text)
	}
	return nil
}

// intError explains why text is not a whole number.
func intError(text string, err error, max string) error {
	if errors.Is(err, strconv.ErrRange) {
		return fmt.Errorf("%s is out of range (at most %s)", text, max)
	}
	if _, ferr := strconv.ParseFloat(text, 64); ferr == nil {
		return fmt.Errorf("want a whole number, got %s (a fraction is never rounded)", text)
	}
	return fmt.Errorf("want a whole number, got %q", text)
}

// want names what a value of type t looks like, for messages.
func want(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		return "a list"
	case reflect.Map:
		return "a mapping"
	}
	return "a single value"
}

// scalarText returns the text of a scalar node as written: a plain scalar's
// own characters (0123, True, ~ stay as they are), a quoted scalar's
// unescaped content, a block scalar's content. null is true for an empty
// value ("field:"); ok is false for a mapping or a list.
func scalarText(n ast.Node) (text string, null, ok bool) {
	switch x := n.(type) {
	case nil:
		return "", true, true
	case *ast.StringNode:
		return x.Value, false, true
	case *ast.LiteralNode:
		if x.Value == nil {
			return "", false, true
		}
		return x.Value.Value, false, true
	case *ast.NullNode:
		if tk := x.GetToken(); tk == nil || tk.Type == token.ImplicitNullType {
			return "", true, true
		}
		return x.GetToken().Value, false, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return x.GetToken().Value, false, true
	}
	return "", false, false
}

// flowPair recognises a one-pair mapping written without a space after the
// colon ("a:9092"), and returns it as the plain scalar it is.
func flowPair(n ast.Node) (string, bool) {
	m, ok := n.(*ast.MappingNode)
	if !ok || len(m.Values) != 1 {
		return "", false
	}
	mv := m.Values[0]
	k, _, kok := scalarText(unwrap(mv.Key))
	val, null, vok := scalarText(unwrap(mv.Value))
	if !kok || !vok || null || mv.Start == nil || mv.Start.Position == nil {
		return "", false
	}
	vt := mv.Value.GetToken()
	if vt == nil || vt.Position == nil || vt.Position.Line != mv.Start.Position.Line || vt.Position.Column != mv.Start.Position.Column+1 {
		return "", false
	}
	return k + ":" + val, true
}

func describe(n ast.Node) string {
	switch n.Type() {
	case ast.MappingType:
		return "a mapping"
	case ast.SequenceType:
		return "a list"
	}
	s, null, ok := scalarText(n)
	if null {
		return "nothing"
	}
	if !ok {
		s = n.String()
	}
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
			d.expand(x, target)
			n = target
		default:
			return n
		}
	}
	return n
}

// expand counts the nodes that alias brings in (target's), and stops the
// decoding with a problem at the alias once they pass MaxAliasNodes.
func (d *decoder) expand(alias, target ast.Node) {
	if d.over {
		return
	}
	size, ok := d.sizes[target]
	if !ok {
		var c nodeCounter
		ast.Walk(&c, target)
		size = int(c)
		if d.sizes == nil {
			d.sizes = map[ast.Node]int{}
		}
		d.sizes[target] = size
	}
	d.aliasNodes += size
	if d.aliasNodes > MaxAliasNodes {
		d.over = true
		d.add(alias, "", "aliases expand to more than %d YAML nodes (aliases of aliases multiply); a config may expand to at most %d: share less through anchors", MaxAliasNodes, MaxAliasNodes)
	}
}

// nodeCounter counts the nodes ast.Walk visits.
type nodeCounter int

func (c *nodeCounter) Visit(ast.Node) ast.Visitor {
	*c++
	return c
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
