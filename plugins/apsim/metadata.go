package apsim

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// The metadata JSON is an object whose members keep the manifest's key order.
// Strings, bools and arrays of strings are written as plain JSON; every other
// value as a typed object:
//
//	{"type":"u32","value":32}              integer scalars (u8 … i64)
//	{"type":"f32","value":0.5}             finite float scalars, shortest round-trip decimal
//	{"type":"f64","bits":"7ff8000000000001"} non-finite floats, by their IEEE bits in hex
//	{"type":"array","elem":"f32","raw":"…"} fixed-size arrays: base64 of the little-endian elements
//	{"type":"array","elem":"array","value":[…]} arrays of arrays, each item encoded as a value
//
// Plain JSON numbers (as other writers produce) read as i64 when they are
// integers that fit, else as f64.

func encodeMetadata(m *tensor.Metadata) (string, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	var err error
	m.All(func(k string, v tensor.Value) bool {
		if !first {
			b.WriteByte(',')
		}
		first = false
		writeJSON(&b, k)
		b.WriteByte(':')
		if err = encodeValue(&b, v, 0); err != nil {
			err = fmt.Errorf("metadata key %q: %w", k, err)
			return false
		}
		return true
	})
	b.WriteByte('}')
	return b.String(), err
}

func writeJSON(b *bytes.Buffer, v any) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	b.Truncate(b.Len() - 1) // the encoder's newline
}

func encodeValue(b *bytes.Buffer, v tensor.Value, depth int) error {
	if depth > maxJSONDepth {
		return fmt.Errorf("arrays nested deeper than %d", maxJSONDepth)
	}
	if !v.IsValid() {
		return fmt.Errorf("invalid value")
	}
	t := v.Type()
	switch {
	case t == tensor.TypeString:
		s, _ := v.Str()
		writeJSON(b, s)
	case t == tensor.TypeBool && v.Bits() <= 1:
		x, _ := v.Bool()
		writeJSON(b, x)
	case t == tensor.TypeF32 || t == tensor.TypeF64:
		fmt.Fprintf(b, `{"type":%q,`, t.String())
		var f float64
		if t == tensor.TypeF32 {
			f = float64(math.Float32frombits(uint32(v.Bits())))
		} else {
			f = math.Float64frombits(v.Bits())
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			w := 16
			if t == tensor.TypeF32 {
				w = 8
			}
			fmt.Fprintf(b, `"bits":"%0*x"}`, w, v.Bits())
		} else {
			bits := 64
			if t == tensor.TypeF32 {
				bits = 32
			}
			fmt.Fprintf(b, `"value":%s}`, strconv.FormatFloat(f, 'g', -1, bits))
		}
	case t == tensor.TypeArray && v.Elem() == tensor.TypeString:
		ss, _ := v.StringSlice()
		if ss == nil {
			ss = []string{}
		}
		writeJSON(b, ss)
	case t == tensor.TypeArray && v.Elem() == tensor.TypeArray:
		items, _ := v.Items()
		b.WriteString(`{"type":"array","elem":"array","value":[`)
		for i, it := range items {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := encodeValue(b, it, depth+1); err != nil {
				return err
			}
		}
		b.WriteString("]}")
	case t == tensor.TypeArray:
		raw, _ := v.Raw()
		fmt.Fprintf(b, `{"type":"array","elem":%q,"raw":%q}`, v.Elem().String(), base64.StdEncoding.EncodeToString(raw))
	default: // integer scalars, and bools stored with another byte than 0 or 1
		fmt.Fprintf(b, `{"type":%q,"value":`, t.String())
		if i, ok := v.Int(); ok && t != tensor.TypeU64 {
			b.WriteString(strconv.FormatInt(i, 10))
		} else {
			b.WriteString(strconv.FormatUint(v.Bits(), 10))
		}
		b.WriteByte('}')
	}
	return nil
}

// decodeMetadata parses the metadata JSON, keeping the key order.
func decodeMetadata(s string) (tensor.Metadata, error) {
	var m tensor.Metadata
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return m, fmt.Errorf("metadata is not a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return m, err
		}
		k := tok.(string)
		if seen[k] {
			return m, fmt.Errorf("metadata key %q appears twice", k)
		}
		seen[k] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return m, err
		}
		v, err := decodeValue(raw, 0)
		if err != nil {
			return m, fmt.Errorf("metadata key %q: %w", k, err)
		}
		m.Set(k, v)
	}
	if _, err := dec.Token(); err != nil {
		return m, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return m, fmt.Errorf("metadata has bytes after its JSON object")
	}
	return m, nil
}

type typedValue struct {
	Type  *string         `json:"type"`
	Elem  *string         `json:"elem"`
	Value json.RawMessage `json:"value"`
	Bits  *string         `json:"bits"`
	Raw   *string         `json:"raw"`
}

func decodeValue(raw json.RawMessage, depth int) (tensor.Value, error) {
	if depth > maxJSONDepth {
		return tensor.Value{}, fmt.Errorf("arrays nested deeper than %d", maxJSONDepth)
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return tensor.Value{}, fmt.Errorf("empty value")
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return tensor.Value{}, err
		}
		return tensor.StringValue(s), nil
	case 't', 'f':
		var x bool
		if err := json.Unmarshal(raw, &x); err != nil {
			return tensor.Value{}, err
		}
		return tensor.BoolValue(x), nil
	case '[':
		var ss []string
		if err := json.Unmarshal(raw, &ss); err != nil {
			return tensor.Value{}, fmt.Errorf("a plain JSON array must hold strings; write other arrays as typed values")
		}
		return tensor.StringArray(ss), nil
	case '{':
		return decodeTyped(raw, depth)
	case 'n':
		return tensor.Value{}, fmt.Errorf("null is not a metadata value")
	}
	// A plain number.
	n := string(raw)
	if i, err := strconv.ParseInt(n, 10, 64); err == nil {
		return tensor.I64Value(i), nil
	}
	f, err := strconv.ParseFloat(n, 64)
	if err != nil {
		return tensor.Value{}, fmt.Errorf("%.40q is not a number", n)
	}
	return tensor.F64Value(f), nil
}

func decodeTyped(raw json.RawMessage, depth int) (tensor.Value, error) {
	var tv typedValue
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&tv); err != nil {
		return tensor.Value{}, fmt.Errorf("malformed typed value: %v", err)
	}
	if tv.Type == nil {
		return tensor.Value{}, fmt.Errorf("typed value without a type")
	}
	t, err := tensor.ParseValueType(*tv.Type)
	if err != nil {
		return tensor.Value{}, err
	}
	only := func(want string) error {
		has := map[string]bool{"elem": tv.Elem != nil, "value": tv.Value != nil, "bits": tv.Bits != nil, "raw": tv.Raw != nil}
		for _, w := range strings.Split(want, ",") {
			if !has[w] {
				return fmt.Errorf("typed %s value needs %q", t, w)
			}
			delete(has, w)
		}
		for k, v := range has {
			if v {
				return fmt.Errorf("typed %s value has an unexpected %q", t, k)
			}
		}
		return nil
	}
	switch t {
	case tensor.TypeString:
		return tensor.Value{}, fmt.Errorf("strings are written as plain JSON strings")
	case tensor.TypeF32, tensor.TypeF64:
		if tv.Bits != nil {
			if err := only("bits"); err != nil {
				return tensor.Value{}, err
			}
			w := 8 * t.Size() / 4
			bits, err := strconv.ParseUint(*tv.Bits, 16, 64)
			if err != nil || len(*tv.Bits) != w || strings.ToLower(*tv.Bits) != *tv.Bits {
				return tensor.Value{}, fmt.Errorf("bits %q are not %d lowercase hex digits", *tv.Bits, w)
			}
			return tensor.Scalar(t, bits)
		}
		if err := only("value"); err != nil {
			return tensor.Value{}, err
		}
		f, err := strconv.ParseFloat(string(tv.Value), t.Size()*8)
		if err != nil {
			return tensor.Value{}, fmt.Errorf("value %.40q is not a %s", tv.Value, t)
		}
		if t == tensor.TypeF32 {
			return tensor.F32Value(float32(f)), nil
		}
		return tensor.F64Value(f), nil
	case tensor.TypeArray:
		if tv.Elem == nil {
			return tensor.Value{}, fmt.Errorf("typed array without elem")
		}
		elem, err := tensor.ParseValueType(*tv.Elem)
		if err != nil {
			return tensor.Value{}, err
		}
		switch elem {
		case tensor.TypeString:
			return tensor.Value{}, fmt.Errorf("arrays of strings are written as plain JSON arrays")
		case tensor.TypeArray:
			if err := only("elem,value"); err != nil {
				return tensor.Value{}, err
			}
			var items []json.RawMessage
			if err := json.Unmarshal(tv.Value, &items); err != nil {
				return tensor.Value{}, fmt.Errorf("array of arrays: value is not a JSON array")
			}
			vals := make([]tensor.Value, len(items))
			for i, it := range items {
				if vals[i], err = decodeValue(it, depth+1); err != nil {
					return tensor.Value{}, fmt.Errorf("item %d: %w", i, err)
				}
			}
			return tensor.NestedArray(vals)
		}
		if err := only("elem,raw"); err != nil {
			return tensor.Value{}, err
		}
		b, err := base64.StdEncoding.Strict().DecodeString(*tv.Raw)
		if err != nil {
			return tensor.Value{}, fmt.Errorf("array of %s: raw is not base64", elem)
		}
		return tensor.ArrayValue(elem, b)
	}
	// Integer scalars and bool.
	if err := only("value"); err != nil {
		return tensor.Value{}, err
	}
	s := string(tv.Value)
	switch t {
	case tensor.TypeI8, tensor.TypeI16, tensor.TypeI32, tensor.TypeI64:
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil || i < -(1<<(8*t.Size()-1)) || i > 1<<(8*t.Size()-1)-1 {
			return tensor.Value{}, fmt.Errorf("value %.40q is not a %s", s, t)
		}
		return tensor.Scalar(t, uint64(i))
	}
	u, err := strconv.ParseUint(s, 10, 64)
	if err != nil || (t.Size() < 8 && u >= 1<<(8*t.Size())) {
		return tensor.Value{}, fmt.Errorf("value %.40q is not a %s", s, t)
	}
	return tensor.Scalar(t, u)
}
