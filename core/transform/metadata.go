package transform

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

func init() {
	Register("metadata", Factory{
		Doc: "Edits the checkpoint's metadata, in this order: copy blocks, rename blocks, delete (key globs), " +
			"set blocks. A set block gives the value's type (u8 … i64, f32, f64, bool, string, array(T)); without " +
			"one it keeps the existing key's type, or takes string or bool from the value.",
		Spec: hcldec.ObjectSpec{
			"delete": &hcldec.AttrSpec{Name: "delete", Type: cty.List(cty.String)},
			"set": &hcldec.BlockTupleSpec{TypeName: "set", Nested: hcldec.ObjectSpec{
				"key":   &hcldec.AttrSpec{Name: "key", Type: cty.String, Required: true},
				"type":  &hcldec.AttrSpec{Name: "type", Type: cty.String},
				"value": &hcldec.AttrSpec{Name: "value", Type: cty.DynamicPseudoType, Required: true},
			}},
			"copy": &hcldec.BlockListSpec{TypeName: "copy", Nested: hcldec.ObjectSpec{
				"from": &hcldec.AttrSpec{Name: "from", Type: cty.String, Required: true},
				"to":   &hcldec.AttrSpec{Name: "to", Type: cty.String, Required: true},
			}},
			"rename": &hcldec.BlockListSpec{TypeName: "rename", Nested: hcldec.ObjectSpec{
				"from": &hcldec.AttrSpec{Name: "from", Type: cty.String, Required: true},
				"to":   &hcldec.AttrSpec{Name: "to", Type: cty.String, Required: true},
			}},
		},
		New: newMetadata,
	})
}

type keyPair struct{ from, to string }

type setOp struct {
	key   string
	typ   string // "" to infer
	value cty.Value
	label string
}

type metadataEdit struct {
	copies, renames []keyPair
	deletes         globs
	sets            []setOp
}

func newMetadata(cfg cty.Value) (Transform, error) {
	a := newAttrs(cfg)
	m := &metadataEdit{}
	var err error
	if m.deletes, err = compileGlobs("delete", a.strings("delete")); err != nil {
		return nil, err
	}
	for _, b := range a.blocks("copy") {
		m.copies = append(m.copies, keyPair{b.str("from"), b.str("to")})
	}
	for _, b := range a.blocks("rename") {
		m.renames = append(m.renames, keyPair{b.str("from"), b.str("to")})
	}
	for i, b := range a.blocks("set") {
		s := setOp{key: b.str("key"), typ: b.str("type"), value: b.get("value"), label: fmt.Sprintf("set block %d", i+1)}
		if s.key == "" {
			return nil, configErr(b, "key", "the key is empty")
		}
		if s.typ != "" {
			if _, _, err := parseValueType(s.typ); err != nil {
				return nil, configErr(b, "type", "%v", err)
			}
			// Check the value now, so a bad one is reported before any
			// checkpoint is read.
			if _, err := convertValue(s.value, s.typ); err != nil {
				return nil, configErr(b, "value", "%v", err)
			}
		}
		m.sets = append(m.sets, s)
	}
	if len(m.copies)+len(m.renames)+len(m.sets) == 0 && m.deletes.empty() {
		return nil, plugin.ConfigErrorf("", "give set, copy or rename blocks, or delete")
	}
	return m, nil
}

func (m *metadataEdit) Plan(in *tensor.Manifest) (*Plan, error) {
	p := Identity(in)
	md := &p.Out.Metadata
	note := func(format string, args ...any) {
		p.Decisions = append(p.Decisions, plugin.Decision{Msg: fmt.Sprintf(format, args...)})
	}
	for _, c := range m.copies {
		v, ok := md.Get(c.from)
		if !ok {
			return nil, plugin.ConfigErrorf("copy", "key %q does not exist%s", c.from, similarKeys(md, c.from))
		}
		md.Set(c.to, v)
		note("copied %s to %s (%s)", c.from, c.to, v.Type())
	}
	for _, r := range m.renames {
		v, ok := md.Get(r.from)
		if !ok {
			return nil, plugin.ConfigErrorf("rename", "key %q does not exist%s", r.from, similarKeys(md, r.from))
		}
		if _, exists := md.Get(r.to); exists && r.to != r.from {
			return nil, plugin.ConfigErrorf("rename", "cannot rename %q to %q: that key exists; delete it first", r.from, r.to)
		}
		md.Delete(r.from)
		md.Set(r.to, v)
		note("renamed %s to %s", r.from, r.to)
	}
	if !m.deletes.empty() {
		var gone []string
		for _, k := range append([]string(nil), md.Keys()...) {
			if m.deletes.match(k) {
				md.Delete(k)
				gone = append(gone, k)
			}
		}
		if len(gone) == 0 {
			note("delete %q: no key matches", m.deletes.patterns)
		} else {
			note("deleted %d keys: %s", len(gone), abbreviate(gone, 8))
		}
	}
	for _, s := range m.sets {
		typ := s.typ
		if typ == "" {
			var err error
			if typ, err = inferType(md, s); err != nil {
				return nil, err
			}
		}
		v, err := convertValue(s.value, typ)
		if err != nil {
			return nil, plugin.ConfigErrorf("set", "%s (%s): %v", s.label, s.key, err)
		}
		old, had := md.Get(s.key)
		md.Set(s.key, v)
		if had {
			note("set %s = %s (%s; was %s)", s.key, v, typ, old)
		} else {
			note("set %s = %s (%s)", s.key, v, typ)
		}
	}
	return p, nil
}

// inferType picks the type of a set without one: the existing key's type,
// else string or bool from the value.
func inferType(md *tensor.Metadata, s setOp) (string, error) {
	if old, ok := md.Get(s.key); ok {
		if old.Type() == tensor.TypeArray {
			if old.Elem() == tensor.TypeArray {
				return "", plugin.ConfigErrorf("set", "%s: key %q holds nested arrays, which set cannot write", s.label, s.key)
			}
			return "array(" + old.Elem().String() + ")", nil
		}
		return old.Type().String(), nil
	}
	switch {
	case s.value.Type() == cty.String:
		return "string", nil
	case s.value.Type() == cty.Bool:
		return "bool", nil
	}
	return "", plugin.ConfigErrorf("set", "%s: key %q is new and its value is not a string or bool; give its type, e.g. type = \"u32\"", s.label, s.key)
}

// parseValueType reads "u32", "string", "array(f32)".
func parseValueType(s string) (tensor.ValueType, tensor.ValueType, error) {
	if strings.HasPrefix(s, "array(") && strings.HasSuffix(s, ")") {
		elem, err := tensor.ParseValueType(strings.TrimSuffix(strings.TrimPrefix(s, "array("), ")"))
		if err != nil {
			return 0, 0, err
		}
		if elem == tensor.TypeArray {
			return 0, 0, fmt.Errorf("nested arrays cannot be set")
		}
		return tensor.TypeArray, elem, nil
	}
	t, err := tensor.ParseValueType(s)
	if err != nil {
		return 0, 0, fmt.Errorf("%v; arrays are written array(u32), array(string) …", err)
	}
	if t == tensor.TypeArray {
		return 0, 0, fmt.Errorf("say the element type: array(u32), array(string) …")
	}
	return t, 0, nil
}

// convertValue turns an HCL value into a metadata value of the given type,
// refusing values that do not fit exactly (a fraction for an integer type,
// 300 for u8, a number for a string).
func convertValue(v cty.Value, typ string) (tensor.Value, error) {
	t, elem, err := parseValueType(typ)
	if err != nil {
		return tensor.Value{}, err
	}
	if v.IsNull() || !v.IsKnown() {
		return tensor.Value{}, fmt.Errorf("the value is null")
	}
	v, _ = v.UnmarkDeep()
	if t != tensor.TypeArray {
		return scalarValue(v, t)
	}
	if !v.CanIterateElements() || v.Type().IsMapType() || v.Type().IsObjectType() {
		return tensor.Value{}, fmt.Errorf("%s needs a list, got %s", typ, v.Type().FriendlyName())
	}
	var items []tensor.Value
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		sv, err := scalarValue(e, elem)
		if err != nil {
			return tensor.Value{}, fmt.Errorf("element %d: %v", len(items), err)
		}
		items = append(items, sv)
	}
	if elem == tensor.TypeString {
		s := make([]string, len(items))
		for i, it := range items {
			s[i], _ = it.Str()
		}
		return tensor.StringArray(s), nil
	}
	size := elem.Size()
	raw := make([]byte, size*len(items))
	for i, it := range items {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], it.Bits())
		copy(raw[i*size:], b[:size])
	}
	return tensor.ArrayValue(elem, raw)
}

func scalarValue(v cty.Value, t tensor.ValueType) (tensor.Value, error) {
	switch t {
	case tensor.TypeString:
		if v.Type() != cty.String {
			return tensor.Value{}, fmt.Errorf("type string needs a quoted string, got %s", v.Type().FriendlyName())
		}
		return tensor.StringValue(v.AsString()), nil
	case tensor.TypeBool:
		if v.Type() != cty.Bool {
			return tensor.Value{}, fmt.Errorf("type bool needs true or false, got %s", v.Type().FriendlyName())
		}
		return tensor.BoolValue(v.True()), nil
	}
	if v.Type() != cty.Number {
		return tensor.Value{}, fmt.Errorf("type %s needs a number, got %s", t, v.Type().FriendlyName())
	}
	bf := v.AsBigFloat()
	switch t {
	case tensor.TypeF32, tensor.TypeF64:
		f, _ := bf.Float64()
		if math.IsInf(f, 0) {
			return tensor.Value{}, fmt.Errorf("%s is out of range for %s", bf.Text('g', 10), t)
		}
		if t == tensor.TypeF32 {
			if math.Abs(f) > math.MaxFloat32 {
				return tensor.Value{}, fmt.Errorf("%s is out of range for f32", bf.Text('g', 10))
			}
			return tensor.F32Value(float32(f)), nil
		}
		return tensor.F64Value(f), nil
	}
	if !bf.IsInt() {
		return tensor.Value{}, fmt.Errorf("%s is not a whole number, as type %s needs", bf.Text('g', 10), t)
	}
	bi, _ := bf.Int(nil)
	var lo, hi *big.Int
	switch t {
	case tensor.TypeU8:
		lo, hi = big.NewInt(0), big.NewInt(math.MaxUint8)
	case tensor.TypeU16:
		lo, hi = big.NewInt(0), big.NewInt(math.MaxUint16)
	case tensor.TypeU32:
		lo, hi = big.NewInt(0), big.NewInt(math.MaxUint32)
	case tensor.TypeU64:
		lo, hi = big.NewInt(0), new(big.Int).SetUint64(math.MaxUint64)
	case tensor.TypeI8:
		lo, hi = big.NewInt(math.MinInt8), big.NewInt(math.MaxInt8)
	case tensor.TypeI16:
		lo, hi = big.NewInt(math.MinInt16), big.NewInt(math.MaxInt16)
	case tensor.TypeI32:
		lo, hi = big.NewInt(math.MinInt32), big.NewInt(math.MaxInt32)
	case tensor.TypeI64:
		lo, hi = big.NewInt(math.MinInt64), big.NewInt(math.MaxInt64)
	default:
		return tensor.Value{}, fmt.Errorf("cannot set a value of type %s", t)
	}
	if bi.Cmp(lo) < 0 || bi.Cmp(hi) > 0 {
		return tensor.Value{}, fmt.Errorf("%s is out of range for %s [%s, %s]", bi, t, lo, hi)
	}
	var bits uint64
	if bi.Sign() < 0 {
		bits = uint64(bi.Int64())
	} else {
		bits = bi.Uint64()
	}
	return tensor.Scalar(t, bits)
}

// similarKeys suggests keys that share the missing key's first component.
func similarKeys(md *tensor.Metadata, key string) string {
	prefix, _, _ := strings.Cut(key, ".")
	var out []string
	for _, k := range md.Keys() {
		if strings.HasPrefix(k, prefix+".") {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "; keys with the same prefix: " + abbreviate(out, 6)
}
