package config

import (
	"errors"
	"fmt"
	"strings"
)

// Environment variables are expanded in each scalar value after the YAML is
// parsed, never in the file's text: a value holding " #", ": ", quotes or
// a newline reaches its field exactly, and a ${NAME} in a comment, a key or
// an x- extension field is never looked up.
//
// In a value:
//
//	${NAME}             the variable's value; an error if it is unset
//	${NAME:-default}    the default when the variable is unset or empty;
//	                    the default may itself hold ${...} and $$
//	$$                  a literal "$"
//
// A "$" followed by anything else is kept as it is.

// expander expands values with lookup.
type expander struct {
	lookup func(string) (string, bool)
	unset  []string // of the value being expanded
}

var errUnterminated = errors.New("unterminated ${ (want ${NAME} or ${NAME:-default})")

// expand returns s with its variables replaced, and the variables it
// needed that are not set (each once). The error is a syntax error: a bad
// name, an unterminated ${.
func (x *expander) expand(s string) (string, []string, error) {
	x.unset = nil
	if !strings.Contains(s, "$") {
		return s, nil, nil
	}
	out, _, err := x.run(s, false, true)
	if err != nil {
		return "", nil, err
	}
	return out, x.unset, nil
}

// run expands s up to its end or, when nested, up to the "}" that closes a
// default (returning its index). eval false only checks the syntax: a
// default that is not used needs none of its variables.
func (x *expander) run(s string, nested, eval bool) (string, int, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if nested && c == '}' {
			return b.String(), i, nil
		}
		if c != '$' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '{':
		default:
			b.WriteByte(c)
			continue
		}
		j := i + 2
		for j < len(s) && s[j] != '}' && s[j] != ':' && s[j] != '$' && s[j] != '\n' {
			j++
		}
		name := s[i+2 : j]
		if j >= len(s) || s[j] == '\n' || s[j] == '$' {
			return "", 0, errUnterminated
		}
		if !validEnvName(name) {
			return "", 0, fmt.Errorf("bad variable name %q (want letters, digits and _, not starting with a digit)", name)
		}
		v, set := "", false
		if eval {
			v, set = x.lookup(name)
		}
		if s[j] == '}' {
			if eval {
				if set {
					b.WriteString(v)
				} else {
					x.missing(name)
				}
			}
			i = j
			continue
		}
		if !strings.HasPrefix(s[j:], ":-") {
			return "", 0, fmt.Errorf("${%s%s...}: want ${NAME} or ${NAME:-default}", name, s[j:min(j+2, len(s))])
		}
		useDefault := eval && (!set || v == "")
		def, end, err := x.run(s[j+2:], true, useDefault)
		if err != nil {
			return "", 0, err
		}
		if j+2+end >= len(s) {
			return "", 0, errUnterminated
		}
		if useDefault {
			b.WriteString(def)
		} else if eval {
			b.WriteString(v)
		}
		i = j + 2 + end
	}
	if nested {
		return "", len(s), nil
	}
	return b.String(), len(s), nil
}

func (x *expander) missing(name string) {
	for _, n := range x.unset {
		if n == name {
			return
		}
	}
	x.unset = append(x.unset, name)
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
