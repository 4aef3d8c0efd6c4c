package httpsink

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

// checkPath reports what is wrong with a gjson path that gjson itself
// would silently read as "no match" for every document: brackets that do
// not close, an unknown @modifier, a trailing escape.
func checkPath(path string) error {
	if strings.TrimSpace(path) == "" {
		return errors.New("empty path")
	}
	var stack []byte
	closer := map[byte]byte{'(': ')', '[': ']', '{': '}'}
	inQuote := false
	for i := 0; i < len(path); i++ {
		c := path[i]
		switch {
		case c == '\\':
			if i+1 >= len(path) {
				return errors.New("ends with an escape (\\)")
			}
			i++
		case c == '"':
			inQuote = !inQuote
		case inQuote:
		case c == '(' || c == '[' || c == '{':
			stack = append(stack, closer[c])
		case c == ')' || c == ']' || c == '}':
			if len(stack) == 0 || stack[len(stack)-1] != c {
				return fmt.Errorf("unexpected %q at %d", c, i)
			}
			stack = stack[:len(stack)-1]
		case c == '@' && (i == 0 || path[i-1] == '.' || path[i-1] == '|'):
			j := i + 1
			for j < len(path) && (path[j] == '_' || path[j] >= 'a' && path[j] <= 'z' || path[j] >= 'A' && path[j] <= 'Z' || path[j] >= '0' && path[j] <= '9') {
				j++
			}
			if name := path[i+1 : j]; name != "" && !gjson.ModifierExists(name, nil) {
				return fmt.Errorf("unknown modifier @%s", name)
			}
		}
	}
	if inQuote {
		return errors.New("unterminated quote")
	}
	if len(stack) > 0 {
		return fmt.Errorf("missing %q", stack[len(stack)-1])
	}
	return nil
}
