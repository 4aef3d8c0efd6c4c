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
func parseArg(spec string) (argFunc, error) {
	switch spec {
	case "id":
		return func(m *pacer.Message) (any, error) { return m.ID, nil }, nil
	case "key":
		return func(m *pacer.Message) (any, error) {
			if m.Key == nil {
				return nil, nil
			}
			return text("key", m.Key)
		}, nil
	case "value":
		return func(m *pacer.Message) (any, error) { return text("value", m.Value) }, nil
	case "key_bytes":
		return func(m *pacer.Message) (any, error) {
			if m.Key == nil {
				return nil, nil
			}
			return m.Key, nil
		}, nil
	case "value_bytes":
		return func(m *pacer.Message) (any, error) {
			if m.Value == nil {
				return []byte{}, nil
			}
			return m.Value, nil
		}, nil
	case "topic":
		return func(m *pacer.Message) (any, error) { return m.Topic, nil }, nil
	case "partition":
		return func(m *pacer.Message) (any, error) { return int64(m.Partition), nil }, nil
	case "offset", "sequence":
		return func(m *pacer.Message) (any, error) { return m.Offset, nil }, nil
	case "timestamp":
		return func(m *pacer.Message) (any, error) {
			if m.Timestamp.IsZero() {
				return nil, nil
			}
			return m.Timestamp.UTC(), nil
		}, nil
	case "attempt":
		return func(m *pacer.Message) (any, error) { return int64(m.Attempt), nil }, nil
	}
	if name, ok := strings.CutPrefix(spec, "headers."); ok && name != "" {
		return func(m *pacer.Message) (any, error) {
			v, ok := m.Headers[name]
			if !ok {
				return nil, nil
			}
			return v, nil
		}, nil
	}
	optional := false
	path, ok := strings.CutPrefix(spec, "json:")
	if !ok {
		path, ok = strings.CutPrefix(spec, "json?:")
		optional = ok
	}
	if ok && path != "" {
		return func(m *pacer.Message) (any, error) {
			if !gjson.ValidBytes(m.Value) {
				return nil, fmt.Errorf("value is not valid JSON (looking up %q)", path)
			}
			r := gjson.GetBytes(m.Value, path)
			if !r.Exists() {
				if optional {
					return nil, nil
				}
				return nil, fmt.Errorf("JSON field %q not found in value", path)
			}
			return jsonArg(r), nil
		}, nil
	}
	return nil, fmt.Errorf("unknown argument %q (want id, key, value, key_bytes, value_bytes, topic, partition, offset, timestamp, attempt, headers.NAME, json:PATH or json?:PATH)", spec)
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
