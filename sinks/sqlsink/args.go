package sqlsink

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/pacer-dev/pacer/pacer"
)

// argFunc extracts one statement argument from a message. An error makes
// the message a Reject.
type argFunc func(m *pacer.Message) (any, error)

// arg is one compiled Config.Args entry. A json:PATH argument has its path
// in jsonPath: argsOf checks once per message, before the first such
// argument, that the value is JSON, and get assumes it.
type arg struct {
	get      argFunc
	jsonPath string
}

// parseArg compiles one Config.Args entry. The forms are:
//
//	id, key, value, topic, partition, offset, timestamp, attempt
//	key_bytes, value_bytes      the raw bytes (bytea / BLOB columns)
//	headers.NAME                a header, NULL when absent
//	json:PATH                   a gjson path into the value; a value that is
//	                            not JSON, or a missing field, rejects the message
//	json?:PATH                  the same, but a missing field is NULL
//
// key and value are text: bytes that are not valid UTF-8 reject the message
// (use key_bytes / value_bytes for binary data).
func parseArg(spec string) (arg, error) {
	if f := fieldArg(spec); f != nil {
		return arg{get: f}, nil
	}
	optional := false
	path, ok := strings.CutPrefix(spec, "json:")
	if !ok {
		path, ok = strings.CutPrefix(spec, "json?:")
		optional = ok
	}
	if ok && path != "" {
		return arg{jsonPath: path, get: func(m *pacer.Message) (any, error) {
			r := gjson.GetBytes(m.Value, path)
			if !r.Exists() {
				if optional {
					return nil, nil
				}
				return nil, fmt.Errorf("JSON field %q not found in value", path)
			}
			return jsonArg(r), nil
		}}, nil
	}
	return arg{}, fmt.Errorf("unknown argument %q (want id, key, value, key_bytes, value_bytes, topic, partition, offset, timestamp, attempt, headers.NAME, json:PATH or json?:PATH)", spec)
}

// fieldArg compiles the forms that read a message field; nil for the rest.
func fieldArg(spec string) argFunc {
	switch spec {
	case "id":
		return func(m *pacer.Message) (any, error) { return m.ID, nil }
	case "key":
		return func(m *pacer.Message) (any, error) {
			if m.Key == nil {
				return nil, nil
			}
			return text("key", m.Key)
		}
	case "value":
		return func(m *pacer.Message) (any, error) { return text("value", m.Value) }
	case "key_bytes":
		return func(m *pacer.Message) (any, error) {
			if m.Key == nil {
				return nil, nil
			}
			return m.Key, nil
		}
	case "value_bytes":
		return func(m *pacer.Message) (any, error) {
			if m.Value == nil {
				return []byte{}, nil
			}
			return m.Value, nil
		}
	case "topic":
		return func(m *pacer.Message) (any, error) { return m.Topic, nil }
	case "partition":
		return func(m *pacer.Message) (any, error) { return int64(m.Partition), nil }
	case "offset", "sequence":
		return func(m *pacer.Message) (any, error) { return m.Offset, nil }
	case "timestamp":
		return func(m *pacer.Message) (any, error) {
			if m.Timestamp.IsZero() {
				return nil, nil
			}
			return m.Timestamp.UTC(), nil
		}
	case "attempt":
		return func(m *pacer.Message) (any, error) { return int64(m.Attempt), nil }
	}
	if name, ok := strings.CutPrefix(spec, "headers."); ok && name != "" {
		return func(m *pacer.Message) (any, error) {
			v, ok := m.Headers[name]
			if !ok {
				return nil, nil
			}
			return v, nil
		}
	}
	return nil
}

func text(what string, b []byte) (any, error) {
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("%s is not valid UTF-8 text (map %s_bytes to a binary column)", what, what)
	}
	return string(b), nil
}

// jsonArg converts a JSON value to the Go value the drivers bind best:
// integers as int64, other numbers as float64, booleans, NULL, strings, and
// objects or arrays as their raw JSON text (for json/jsonb/TEXT columns).
func jsonArg(r gjson.Result) any {
	switch r.Type {
	case gjson.Null:
		return nil
	case gjson.False, gjson.True:
		return r.Bool()
	case gjson.Number:
		if i := r.Int(); float64(i) == r.Num && !strings.ContainsAny(r.Raw, ".eE") {
			return i
		}
		return r.Num
	case gjson.String:
		return r.Str
	}
	return r.Raw
}
