package chattemplate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// Object is a JSON object that keeps the order of its keys, as a Python dict
// does; templates that print a message or a tool schema with tojson show it.
type Object struct {
	keys   []string
	values map[string]any
}

// Keys returns the keys in order.
func (o *Object) Keys() []string { return o.keys }

// Get returns the value of a key.
func (o *Object) Get(key string) (any, bool) {
	v, ok := o.values[key]
	return v, ok
}

// Set sets a key, appending it if it is new.
func (o *Object) Set(key string, v any) {
	if o.values == nil {
		o.values = map[string]any{}
	}
	if _, ok := o.values[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.values[key] = v
}

// ParseJSON decodes JSON for Input: objects become *Object (keys in order),
// arrays []any, numbers json.Number, and strings, booleans and null their Go
// values. A list of messages decodes to a []any ready for Input.Messages.
func ParseJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("json: data after the value")
	}
	return v, nil
}

const maxJSONDepth = 10000

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, errors.New("json: nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("json: %w", err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &Object{values: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, fmt.Errorf("json: %w", err)
				}
				key, _ := kt.(string)
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				o.Set(key, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("json: %w", err)
			}
			return o, nil
		case '[':
			list := []any{}
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("json: %w", err)
			}
			return list, nil
		}
		return nil, fmt.Errorf("json: unexpected %v", t)
	default:
		return t, nil
	}
}

// toTemplateValue converts Go values to what gonja handles as Python values:
// objects and maps become ordered dicts, numbers int64 or float64.
func toTemplateValue(v any) any {
	switch x := v.(type) {
	case *Object:
		d := exec.NewDict()
		for _, k := range x.keys {
			d.Pairs = append(d.Pairs, &exec.Pair{Key: exec.AsValue(k), Value: exec.AsValue(toTemplateValue(x.values[k]))})
		}
		return d
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		d := exec.NewDict()
		for _, k := range keys {
			d.Pairs = append(d.Pairs, &exec.Pair{Key: exec.AsValue(k), Value: exec.AsValue(toTemplateValue(x[k]))})
		}
		return d
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = toTemplateValue(e)
		}
		return out
	case []map[string]any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = toTemplateValue(e)
		}
		return out
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		if f, err := x.Float64(); err == nil {
			return f
		}
		return x.String()
	case json.RawMessage:
		if parsed, err := ParseJSON(x); err == nil {
			return toTemplateValue(parsed)
		}
		return string(x)
	}
	return v
}

// toJSONFilter is transformers' tojson: Python's json.dumps with
// ensure_ascii=False, separators ", " and ": " (or "," and ": " with an
// indent), optional indent, separators and sort_keys.
func toJSONFilter(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	o := jsonOptions{itemSep: ", ", keySep: ": "}
	if v, ok := params.KwArgs["indent"]; ok && !v.IsNil() {
		if v.IsInteger() {
			o.indent = strings.Repeat(" ", max(v.Integer(), 0))
		} else {
			o.indent = v.String()
		}
		o.hasIndent = true
		o.itemSep = ","
	}
	if len(params.Args) > 0 && params.Args[0].IsInteger() {
		o.indent, o.hasIndent, o.itemSep = strings.Repeat(" ", max(params.Args[0].Integer(), 0)), true, ","
	}
	if v, ok := params.KwArgs["ensure_ascii"]; ok {
		o.ascii = v.IsTrue()
	}
	if v, ok := params.KwArgs["sort_keys"]; ok {
		o.sortKeys = v.IsTrue()
	}
	if v, ok := params.KwArgs["separators"]; ok && v.IsList() && v.Len() == 2 {
		o.itemSep, o.keySep = v.Index(0).String(), v.Index(1).String()
	}
	var sb strings.Builder
	if err := o.write(&sb, in, 0); err != nil {
		return exec.AsValue(err)
	}
	return exec.AsSafeValue(sb.String())
}

type jsonOptions struct {
	indent    string
	hasIndent bool
	itemSep   string
	keySep    string
	ascii     bool
	sortKeys  bool
}

func (o *jsonOptions) newline(sb *strings.Builder, depth int) {
	if o.hasIndent {
		sb.WriteByte('\n')
		for i := 0; i < depth; i++ {
			sb.WriteString(o.indent)
		}
	}
}

func (o *jsonOptions) write(sb *strings.Builder, v *exec.Value, depth int) error {
	if depth > maxJSONDepth {
		return errors.New("tojson: nested too deeply")
	}
	if v == nil || v.IsNil() {
		sb.WriteString("null")
		return nil
	}
	switch x := v.Interface().(type) {
	case *exec.Dict:
		return o.writePairs(sb, x.Pairs, depth)
	case exec.Dict:
		return o.writePairs(sb, x.Pairs, depth)
	}
	switch {
	case v.IsBool():
		sb.WriteString(strconv.FormatBool(v.Bool()))
	case v.IsInteger():
		sb.WriteString(strconv.Itoa(v.Integer()))
	case v.IsFloat():
		sb.WriteString(pythonFloat(v.Float()))
	case v.IsString():
		writeJSONString(sb, v.String(), o.ascii)
	case v.IsList():
		n := v.Len()
		sb.WriteByte('[')
		for i := 0; i < n; i++ {
			if i > 0 {
				sb.WriteString(o.itemSep)
			}
			o.newline(sb, depth+1)
			if err := o.write(sb, v.Index(i), depth+1); err != nil {
				return err
			}
		}
		if n > 0 {
			o.newline(sb, depth)
		}
		sb.WriteByte(']')
	case v.IsDict():
		keys := v.Keys()
		pairs := make([]*exec.Pair, 0, len(keys))
		for _, k := range keys {
			val, _ := v.GetItem(k.Interface())
			pairs = append(pairs, &exec.Pair{Key: k, Value: val})
		}
		sort.SliceStable(pairs, func(i, j int) bool { return pairs[i].Key.String() < pairs[j].Key.String() })
		return o.writePairs(sb, pairs, depth)
	default:
		writeJSONString(sb, v.String(), o.ascii)
	}
	return nil
}

func (o *jsonOptions) writePairs(sb *strings.Builder, pairs []*exec.Pair, depth int) error {
	if o.sortKeys {
		pairs = append([]*exec.Pair(nil), pairs...)
		sort.SliceStable(pairs, func(i, j int) bool { return pairs[i].Key.String() < pairs[j].Key.String() })
	}
	sb.WriteByte('{')
	for i, p := range pairs {
		if i > 0 {
			sb.WriteString(o.itemSep)
		}
		o.newline(sb, depth+1)
		writeJSONString(sb, p.Key.String(), o.ascii)
		sb.WriteString(o.keySep)
		if err := o.write(sb, p.Value, depth+1); err != nil {
			return err
		}
	}
	if len(pairs) > 0 {
		o.newline(sb, depth)
	}
	sb.WriteByte('}')
	return nil
}

// writeJSONString quotes s as Python's json.dumps does: escape the quote, the
// backslash and control characters; with ascii, also everything beyond ASCII
// (as \uXXXX, with surrogate pairs).
func writeJSONString(sb *strings.Builder, s string, ascii bool) {
	sb.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			sb.WriteString(`\"`)
		case '\\':
			sb.WriteString(`\\`)
		case '\n':
			sb.WriteString(`\n`)
		case '\r':
			sb.WriteString(`\r`)
		case '\t':
			sb.WriteString(`\t`)
		case '\b':
			sb.WriteString(`\b`)
		case '\f':
			sb.WriteString(`\f`)
		default:
			switch {
			case r < 0x20 || (ascii && r >= 0x7f && r < 0x10000):
				fmt.Fprintf(sb, `\u%04x`, r)
			case ascii && r >= 0x10000:
				r -= 0x10000
				fmt.Fprintf(sb, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
			case r == utf8.RuneError:
				sb.WriteRune(r)
			default:
				sb.WriteRune(r)
			}
		}
	}
	sb.WriteByte('"')
}

// pythonFloat formats a float as Python's repr does.
func pythonFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	abs := math.Abs(f)
	if f != 0 && (abs < 1e-4 || abs >= 1e16) {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		// Go writes e+06 or e-05; Python e+16 and e-05, at least two digits.
		return s
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}

// ParseInput decodes the JSON of a conversation to render: a list of
// messages, or an object with "messages" and other inputs ("tools",
// "documents", "add_generation_prompt"; any other key becomes one of Vars,
// such as "enable_thinking"). Objects keep their key order (see ParseJSON).
func ParseInput(data []byte) (*Input, error) {
	v, err := ParseJSON(data)
	if err != nil {
		return nil, err
	}
	in := &Input{}
	switch x := v.(type) {
	case []any:
		in.Messages = x
	case *Object:
		for _, k := range x.Keys() {
			val, _ := x.Get(k)
			switch k {
			case "messages":
				l, ok := val.([]any)
				if !ok {
					return nil, errors.New(`"messages" is not a list`)
				}
				in.Messages = l
			case "tools", "documents":
				l, ok := val.([]any)
				if !ok && val != nil {
					return nil, fmt.Errorf("%q is not a list", k)
				}
				if k == "tools" {
					in.Tools = l
				} else {
					in.Documents = l
				}
			case "add_generation_prompt":
				bv, ok := val.(bool)
				if !ok {
					return nil, errors.New(`"add_generation_prompt" is not a boolean`)
				}
				in.AddGenerationPrompt = bv
			default:
				if in.Vars == nil {
					in.Vars = map[string]any{}
				}
				in.Vars[k] = val
			}
		}
		if in.Messages == nil {
			return nil, errors.New(`the object has no "messages" list`)
		}
	default:
		return nil, errors.New(`want a JSON list of messages or an object with "messages"`)
	}
	return in, nil
}
