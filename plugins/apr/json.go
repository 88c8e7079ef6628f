package apr

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// RawJSONPrefix starts the metadata keys that hold a JSON value verbatim:
// a top-level member of the APR metadata whose value has no typed
// equivalent (an object, a mixed array) is read as the string key
// RawJSONPrefix+name holding its compact JSON text, and written back as
// that JSON under name.
const RawJSONPrefix = "apr.json."

// Typed reading of well-known keys, so that a file read and written again
// keeps the JSON types aprender's structs require.
var (
	u64Keys = setOf("total_size", "param_count", "hidden_size", "num_layers", "num_heads", "num_kv_heads",
		"vocab_size", "intermediate_size", "max_position_embeddings", "head_dim", "num_experts",
		"num_experts_per_tok", "moe_intermediate_size",
		"tokenizer.vocab_size", "tokenizer.bos_token_id", "tokenizer.eos_token_id", "tokenizer.padding_token_id")
	u32Keys        = setOf("rope_type")
	f32Keys        = setOf("rope_theta", "rms_norm_eps")
	f32ArrayKeys   = setOf("tokenizer.scores")
	i32ArrayKeys   = setOf("tokenizer.token_type")
	stringTypeKeys = setOf("model_type", "name", "description", "author", "license", "data_source",
		"data_license", "version", "source", "original_format", "created_at", "chat_template",
		"chat_format", "architecture", "hf_architecture", "hf_model_type")
)

func setOf(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// parseMetadataJSON reads the metadata section into typed metadata, in the
// order of its members. Null members are left out; a member given twice
// keeps its last value, as aprender reads it.
func parseMetadataJSON(data []byte) (tensor.Metadata, error) {
	var md tensor.Metadata
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return md, fmt.Errorf("metadata is not JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return md, fmt.Errorf("metadata is not a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return md, fmt.Errorf("metadata is not valid JSON: %w", err)
		}
		key, ok := tok.(string)
		if !ok {
			return md, fmt.Errorf("metadata: object key is not a string")
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return md, fmt.Errorf("metadata member %q: %w", key, err)
		}
		if strings.HasPrefix(key, RawJSONPrefix) {
			// A key spelled like our own convention holds a string; keep it
			// as a raw JSON value so it is written back unchanged.
			md.Delete(key)
			md.Set(RawJSONPrefix+key, stringJSON(raw))
			continue
		}
		v, isRaw, err := jsonToValue(key, raw)
		if err != nil {
			return md, fmt.Errorf("metadata member %q: %w", key, err)
		}
		md.Delete(key)
		md.Delete(RawJSONPrefix + key)
		switch {
		case isRaw:
			md.Set(RawJSONPrefix+key, v)
		case v.IsValid():
			md.Set(key, v)
		}
	}
	if _, err := dec.Token(); err != nil {
		return md, fmt.Errorf("metadata is not valid JSON: %w", err)
	}
	if dec.More() {
		return md, fmt.Errorf("metadata has data after its JSON object")
	}
	var rest json.RawMessage
	if err := dec.Decode(&rest); err == nil {
		return md, fmt.Errorf("metadata has data after its JSON object")
	}
	return md, nil
}

// stringJSON compacts a JSON text into a string value.
func stringJSON(raw []byte) tensor.Value {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return tensor.StringValue(string(raw))
	}
	return tensor.StringValue(b.String())
}

// jsonToValue converts one member. It returns the zero Value for null, and
// isRaw when the value only survives as JSON text.
func jsonToValue(key string, raw json.RawMessage) (v tensor.Value, isRaw bool, err error) {
	var x any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&x); err != nil {
		return v, false, err
	}
	switch t := x.(type) {
	case nil:
		return tensor.Value{}, false, nil
	case string:
		return tensor.StringValue(t), false, nil
	case bool:
		return tensor.BoolValue(t), false, nil
	case json.Number:
		return numberValue(key, t), false, nil
	case []any:
		if v, ok := arrayValue(key, t); ok {
			return v, false, nil
		}
	}
	return stringJSON(raw), true, nil
}

func numberValue(key string, n json.Number) tensor.Value {
	s := string(n)
	switch {
	case f32Keys[key]:
		f, _ := strconv.ParseFloat(s, 32)
		return tensor.F32Value(float32(f))
	case u32Keys[key]:
		if u, err := strconv.ParseUint(s, 10, 32); err == nil {
			return tensor.U32Value(uint32(u))
		}
	}
	if u, err := strconv.ParseUint(s, 10, 64); err == nil {
		return tensor.U64Value(u)
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return tensor.I64Value(i)
	}
	f, _ := strconv.ParseFloat(s, 64)
	return tensor.F64Value(f)
}

// arrayValue converts a JSON array whose elements share one type.
func arrayValue(key string, items []any) (tensor.Value, bool) {
	if len(items) == 0 {
		return tensor.Value{}, false
	}
	switch items[0].(type) {
	case string:
		out := make([]string, len(items))
		for i, it := range items {
			s, ok := it.(string)
			if !ok {
				return tensor.Value{}, false
			}
			out[i] = s
		}
		return tensor.StringArray(out), true
	case bool:
		out := make([]byte, len(items))
		for i, it := range items {
			b, ok := it.(bool)
			if !ok {
				return tensor.Value{}, false
			}
			if b {
				out[i] = 1
			}
		}
		v, err := tensor.ArrayValue(tensor.TypeBool, out)
		return v, err == nil
	case json.Number:
		return numberArray(key, items)
	case []any:
		out := make([]tensor.Value, len(items))
		for i, it := range items {
			sub, ok := it.([]any)
			if !ok {
				return tensor.Value{}, false
			}
			v, ok := arrayValue("", sub)
			if !ok {
				return tensor.Value{}, false
			}
			out[i] = v
		}
		v, err := tensor.NestedArray(out)
		return v, err == nil
	}
	return tensor.Value{}, false
}

func numberArray(key string, items []any) (tensor.Value, bool) {
	nums := make([]string, len(items))
	allInt := true
	for i, it := range items {
		n, ok := it.(json.Number)
		if !ok {
			return tensor.Value{}, false
		}
		nums[i] = string(n)
		if _, err := strconv.ParseInt(nums[i], 10, 64); err != nil {
			allInt = false
		}
	}
	switch {
	case f32ArrayKeys[key]:
		out := make([]float32, len(nums))
		for i, s := range nums {
			f, _ := strconv.ParseFloat(s, 32)
			out[i] = float32(f)
		}
		return tensor.Float32Array(out), true
	case i32ArrayKeys[key] && allInt:
		out := make([]int32, len(nums))
		for i, s := range nums {
			n, err := strconv.ParseInt(s, 10, 32)
			if err != nil {
				return i64Array(nums), true
			}
			out[i] = int32(n)
		}
		return tensor.Int32Array(out), true
	case allInt:
		return i64Array(nums), true
	}
	raw := make([]byte, 8*len(nums))
	for i, s := range nums {
		f, _ := strconv.ParseFloat(s, 64)
		binary.LittleEndian.PutUint64(raw[8*i:], math.Float64bits(f))
	}
	v, _ := tensor.ArrayValue(tensor.TypeF64, raw)
	return v, true
}

func i64Array(nums []string) tensor.Value {
	raw := make([]byte, 8*len(nums))
	for i, s := range nums {
		n, _ := strconv.ParseInt(s, 10, 64)
		binary.LittleEndian.PutUint64(raw[8*i:], uint64(n))
	}
	v, _ := tensor.ArrayValue(tensor.TypeI64, raw)
	return v
}

// appendJSONString appends s as a JSON string the way serde_json writes
// one: only '"', '\\' and control characters are escaped (\b \f \n \r \t,
// others as \u00xx); invalid UTF-8 becomes U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"':
				b = append(b, '\\', '"')
			case c == '\\':
				b = append(b, '\\', '\\')
			case c == '\b':
				b = append(b, '\\', 'b')
			case c == '\f':
				b = append(b, '\\', 'f')
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// formatFloat renders a finite float the way serde_json (ryu) does:
// shortest round-trip digits, "1.0" for integers, "0.001" down to 1e-5,
// scientific as "1e-6" or "1.5e30" outside that range.
func formatFloat(f float64, bitSize int) string {
	if f == 0 {
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	s := strconv.FormatFloat(f, 'e', -1, bitSize)
	sign := ""
	if s[0] == '-' {
		sign, s = "-", s[1:]
	}
	mant, expStr, _ := strings.Cut(s, "e")
	exp, _ := strconv.Atoi(expStr)
	digits := strings.Replace(mant, ".", "", 1)
	length := len(digits)
	kk := exp + 1 // 10^(kk-1) <= |f| < 10^kk
	k := kk - length
	maxKK := 16
	if bitSize == 32 {
		maxKK = 13
	}
	var out string
	switch {
	case k >= 0 && kk <= maxKK:
		out = digits + strings.Repeat("0", k) + ".0"
	case kk > 0 && kk <= maxKK:
		out = digits[:kk] + "." + digits[kk:]
	case kk > -5 && kk <= 0:
		out = "0." + strings.Repeat("0", -kk) + digits
	case length == 1:
		out = digits + "e" + strconv.Itoa(kk-1)
	default:
		out = digits[:1] + "." + digits[1:] + "e" + strconv.Itoa(kk-1)
	}
	return sign + out
}

func appendFloat(b []byte, f float64, bitSize int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	return append(b, formatFloat(f, bitSize)...)
}

// appendJSONValue appends v as JSON.
func appendJSONValue(b []byte, v tensor.Value) ([]byte, error) {
	switch v.Type() {
	case tensor.TypeString:
		s, _ := v.Str()
		return appendJSONString(b, s), nil
	case tensor.TypeBool:
		t, _ := v.Bool()
		return strconv.AppendBool(b, t), nil
	case tensor.TypeF32:
		f, _ := v.Float()
		return appendFloat(b, f, 32), nil
	case tensor.TypeF64:
		f, _ := v.Float()
		return appendFloat(b, f, 64), nil
	case tensor.TypeU8, tensor.TypeU16, tensor.TypeU32, tensor.TypeU64:
		u, _ := v.Uint()
		return strconv.AppendUint(b, u, 10), nil
	case tensor.TypeI8, tensor.TypeI16, tensor.TypeI32, tensor.TypeI64:
		i, _ := v.Int()
		return strconv.AppendInt(b, i, 10), nil
	case tensor.TypeArray:
		return appendJSONArray(b, v)
	}
	return b, fmt.Errorf("metadata value of type %s has no JSON form", v.Type())
}

func appendJSONArray(b []byte, v tensor.Value) ([]byte, error) {
	b = append(b, '[')
	switch v.Elem() {
	case tensor.TypeString:
		ss, _ := v.StringSlice()
		for i, s := range ss {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, s)
		}
	case tensor.TypeArray:
		items, _ := v.Items()
		for i, it := range items {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendJSONValue(b, it); err != nil {
				return b, err
			}
		}
	default:
		raw, _ := v.Raw()
		size := v.Elem().Size()
		for i := 0; i+size <= len(raw); i += size {
			if i > 0 {
				b = append(b, ',')
			}
			e := raw[i : i+size]
			switch v.Elem() {
			case tensor.TypeU8:
				b = strconv.AppendUint(b, uint64(e[0]), 10)
			case tensor.TypeI8:
				b = strconv.AppendInt(b, int64(int8(e[0])), 10)
			case tensor.TypeBool:
				b = strconv.AppendBool(b, e[0] != 0)
			case tensor.TypeU16:
				b = strconv.AppendUint(b, uint64(binary.LittleEndian.Uint16(e)), 10)
			case tensor.TypeI16:
				b = strconv.AppendInt(b, int64(int16(binary.LittleEndian.Uint16(e))), 10)
			case tensor.TypeU32:
				b = strconv.AppendUint(b, uint64(binary.LittleEndian.Uint32(e)), 10)
			case tensor.TypeI32:
				b = strconv.AppendInt(b, int64(int32(binary.LittleEndian.Uint32(e))), 10)
			case tensor.TypeU64:
				b = strconv.AppendUint(b, binary.LittleEndian.Uint64(e), 10)
			case tensor.TypeI64:
				b = strconv.AppendInt(b, int64(binary.LittleEndian.Uint64(e)), 10)
			case tensor.TypeF32:
				b = appendFloat(b, float64(math.Float32frombits(binary.LittleEndian.Uint32(e))), 32)
			case tensor.TypeF64:
				b = appendFloat(b, math.Float64frombits(binary.LittleEndian.Uint64(e)), 64)
			}
		}
	}
	return append(b, ']'), nil
}
