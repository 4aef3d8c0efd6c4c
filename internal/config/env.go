package config

import (
	"fmt"
	"strings"
)

// Expand replaces ${NAME} and ${NAME:-default} in text with values from
// lookup; "$$" is a literal "$", and a "$" not followed by "{" is left alone.
// Lines whose first non-blank character is '#' are left untouched. Every
// unset variable without a default, and every unterminated "${", is reported
// with its line; expansion never adds or removes lines unless a value holds a
// newline.
func Expand(text string, lookup func(string) (string, bool)) (string, Problems) {
	var out strings.Builder
	out.Grow(len(text))
	var probs Problems
	line := 1
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c == '\n' {
			line++
			out.WriteByte(c)
			continue
		}
		if c == '#' && lineStart(text, i) {
			j := strings.IndexByte(text[i:], '\n')
			if j < 0 {
				j = len(text) - i
			}
			out.WriteString(text[i : i+j])
			i += j - 1
			continue
		}
		if c != '$' || i+1 >= len(text) {
			out.WriteByte(c)
			continue
		}
		switch text[i+1] {
		case '$':
			out.WriteByte('$')
			i++
			continue
		case '{':
		default:
			out.WriteByte(c)
			continue
		}
		end := strings.IndexAny(text[i+2:], "}\n")
		if end < 0 || text[i+2+end] != '}' {
			probs = append(probs, Problem{Line: line, Msg: "unterminated ${ (want ${NAME} or ${NAME:-default})"})
			out.WriteString(text[i:])
			break
		}
		expr := text[i+2 : i+2+end]
		name, def, hasDef := strings.Cut(expr, ":-")
		if !validEnvName(name) {
			probs = append(probs, Problem{Line: line, Msg: fmt.Sprintf("bad variable name %q in ${%s}", name, expr)})
		} else if v, ok := lookup(name); ok && (v != "" || !hasDef) {
			out.WriteString(v)
		} else if hasDef {
			out.WriteString(def)
		} else {
			probs = append(probs, Problem{Line: line, Msg: fmt.Sprintf("environment variable %s is not set (write ${%s:-default} to give a default)", name, name)})
		}
		i += 2 + end
	}
	return out.String(), probs
}

func lineStart(text string, i int) bool {
	for j := i - 1; j >= 0; j-- {
		switch text[j] {
		case ' ', '\t':
			continue
		case '\n':
			return true
		default:
			return false
		}
	}
	return true
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
