package httpsink

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"text/template"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/pacer-dev/pacer/pacer"
)

// tmplData is what body and header templates see.
type tmplData struct {
	ID        string
	Key       string
	Value     string
	Headers   map[string]string
	Topic     string
	Partition int32
	Offset    int64
	raw       []byte
	jsonOK    int8 // whether raw is JSON: 0 not yet checked, 1 yes, -1 no
}

// Field returns the JSON field at path (gjson syntax) of the message value
// as a string. A value that is not JSON, or a missing field, is an error.
func (d *tmplData) Field(path string) (string, error) {
	r, err := d.lookup(path)
	if err != nil {
		return "", err
	}
	return r.String(), nil
}

// Raw returns the JSON field at path as raw JSON, for embedding.
func (d *tmplData) Raw(path string) (string, error) {
	r, err := d.lookup(path)
	if err != nil {
		return "", err
	}
	return r.Raw, nil
}

func (d *tmplData) lookup(path string) (gjson.Result, error) {
	if d.jsonOK == 0 {
		d.jsonOK = -1
		if gjson.ValidBytes(d.raw) {
			d.jsonOK = 1
		}
	}
	if d.jsonOK < 0 {
		return gjson.Result{}, fmt.Errorf("%w: value is not valid JSON (looking up %q)", errData, path)
	}
	r := gjson.GetBytes(d.raw, path)
	if !r.Exists() {
		return gjson.Result{}, fmt.Errorf("%w: JSON field %q not found in value", errData, path)
	}
	return r, nil
}

var funcs = template.FuncMap{
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
	"base64": func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) },
}

func parseTemplate(name, text string) (*template.Template, error) {
	return template.New(name).Funcs(funcs).Option("missingkey=error").Parse(text)
}

func dataOf(m *pacer.Message) *tmplData {
	return &tmplData{
		ID: m.ID, Key: string(m.Key), Value: string(m.Value), Headers: m.Headers,
		Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, raw: m.Value,
	}
}

// render executes t over d into w. Template errors become ErrRender.
func render(t *template.Template, d *tmplData, w io.Writer) error {
	if err := t.Execute(w, d); err != nil {
		return fmt.Errorf("%w %q: %s: %w", ErrRender, d.ID, t.Name(), err)
	}
	return nil
}

// writeJSONElement writes body as an element of a JSON array: as is when it
// is valid JSON, else as a JSON string (base64 if not valid UTF-8).
func writeJSONElement(dst *bytes.Buffer, body []byte) {
	if json.Valid(body) {
		dst.Write(body)
		return
	}
	var s string
	if utf8.Valid(body) {
		s = string(body)
	} else {
		s = base64.StdEncoding.EncodeToString(body)
	}
	b, _ := json.Marshal(s)
	dst.Write(b)
}
