package transform

import (
	"fmt"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/sluice-ml/sluice/sdk/codec"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

func init() {
	Register("cast", Factory{
		Doc: "Casts the matched float tensors to another float type (f64, f32, f16, bf16, f8_e4m3, f8_e5m2), " +
			"rounding to nearest even. Integer tensors, and casts to an integer type, need allow_integers = true. " +
			"Quantized tensors are left to dequantize.",
		Spec: hcldec.ObjectSpec{
			"type":           &hcldec.AttrSpec{Name: "type", Type: cty.String, Required: true},
			"match":          &hcldec.AttrSpec{Name: "match", Type: cty.List(cty.String)},
			"exclude":        &hcldec.AttrSpec{Name: "exclude", Type: cty.List(cty.String)},
			"allow_integers": &hcldec.AttrSpec{Name: "allow_integers", Type: cty.Bool},
		},
		New: newCast,
	})
	Register("dequantize", Factory{
		Doc: "Decodes the matched block-quantized (ggml) and QTensor (apsim) tensors to a float type, f32 by default.",
		Spec: hcldec.ObjectSpec{
			"type":    &hcldec.AttrSpec{Name: "type", Type: cty.String},
			"match":   &hcldec.AttrSpec{Name: "match", Type: cty.List(cty.String)},
			"exclude": &hcldec.AttrSpec{Name: "exclude", Type: cty.List(cty.String)},
		},
		New: newDequantize,
	})
}

// selection is the match/exclude pair most transforms take.
type selection struct {
	match, exclude globs
}

func parseSelection(a attrs) (selection, error) {
	var s selection
	var err error
	if s.match, err = compileGlobs("match", a.strings("match")); err != nil {
		return s, err
	}
	if s.exclude, err = compileGlobs("exclude", a.strings("exclude")); err != nil {
		return s, err
	}
	return s, nil
}

// selects reports whether a tensor is matched (every tensor when match is
// unset) and not excluded.
func (s selection) selects(name string) bool {
	return s.match.matchOrAll(name) && !(s.exclude.match(name))
}

type cast struct {
	sel           selection
	to            tensor.DType
	allowIntegers bool
}

// castable lists the float dtypes a cast converts between.
var castable = []tensor.DType{tensor.F64, tensor.F32, tensor.F16, tensor.BF16, tensor.F8E4M3, tensor.F8E5M2}

func newCast(cfg cty.Value) (Transform, error) {
	a := newAttrs(cfg)
	c := &cast{allowIntegers: a.boolean("allow_integers")}
	var err error
	if c.sel, err = parseSelection(a); err != nil {
		return nil, err
	}
	dt, err := tensor.ParseDType(a.str("type"))
	if err != nil {
		return nil, plugin.ConfigErrorf("type", "%v", err)
	}
	switch {
	case isFloatDType(dt):
	case isIntegerDType(dt):
		if !c.allowIntegers {
			return nil, plugin.ConfigErrorf("type", "%s is an integer type; casting floats to integers needs allow_integers = true", dt)
		}
	default:
		return nil, plugin.ConfigErrorf("type", "cast converts between float types (%v); use quantize for %s", castable, dt)
	}
	if !codec.CanEncode(dt) {
		return nil, plugin.ConfigErrorf("type", "cannot encode %s", dt)
	}
	c.to = dt
	return c, nil
}

func (c *cast) Plan(in *tensor.Manifest) (*Plan, error) {
	p := Identity(in)
	n := 0
	for i := range in.Tensors {
		t := &in.Tensors[i]
		if !c.sel.selects(t.Name) {
			continue
		}
		var why string
		switch {
		case t.DType == c.to:
			why = "already " + string(c.to)
		case isQuantizedDType(t.DType):
			why = "quantized; use a dequantize stage to decode it"
		case !t.DType.Known():
			why = fmt.Sprintf("unknown dtype %q", t.DType)
		case isIntegerDType(t.DType) && !c.allowIntegers:
			why = "integer tensor (set allow_integers = true to cast it)"
		case isIntegerDType(t.DType) && isIntegerDType(c.to) && !exactThroughFloat32(t.DType):
			return nil, &TensorError{Tensor: t.Name, Msg: fmt.Sprintf("casting %s to %s would pass through float32 and lose integers above 2^24", t.DType, c.to), Config: true}
		}
		if why != "" {
			p.Decisions = append(p.Decisions, plugin.Decision{Tensor: t.Name, Msg: fmt.Sprintf("kept %s: %s", t.DType, why)})
			continue
		}
		if err := convertTensor(p, i, t, c.to); err != nil {
			return nil, err
		}
		n++
	}
	p.Decisions = append([]plugin.Decision{{Msg: fmt.Sprintf("%d tensors cast to %s", n, c.to)}}, p.Decisions...)
	return p, nil
}

// convertTensor makes output tensor i of p the input tensor t converted to
// dtype to, with the decision that shows the conversion.
func convertTensor(p *Plan, i int, t *tensor.TensorInfo, to tensor.DType) error {
	op, out, err := ConvertOp(t, to)
	if err != nil {
		return blameConfig(err)
	}
	p.Out.Tensors[i] = out
	p.Mappings[i].Ops = []Op{op}
	p.Decisions = append(p.Decisions, plugin.Decision{Tensor: t.Name, Msg: op.String()})
	return nil
}

// exactThroughFloat32 reports whether every value of an integer dtype is a
// float32 (at most 24 significant bits).
func exactThroughFloat32(dt tensor.DType) bool {
	switch dt {
	case tensor.I8, tensor.U8, tensor.I16, tensor.U16, tensor.Bool:
		return true
	}
	return false
}

type dequantize struct {
	sel selection
	to  tensor.DType
}

func newDequantize(cfg cty.Value) (Transform, error) {
	a := newAttrs(cfg)
	d := &dequantize{to: tensor.F32}
	var err error
	if d.sel, err = parseSelection(a); err != nil {
		return nil, err
	}
	if a.has("type") {
		dt, err := tensor.ParseDType(a.str("type"))
		if err != nil {
			return nil, plugin.ConfigErrorf("type", "%v", err)
		}
		if !isFloatDType(dt) {
			return nil, plugin.ConfigErrorf("type", "dequantize decodes to a float type (%v), not %s", castable, dt)
		}
		d.to = dt
	}
	return d, nil
}

func (d *dequantize) Plan(in *tensor.Manifest) (*Plan, error) {
	p := Identity(in)
	n := 0
	for i := range in.Tensors {
		t := &in.Tensors[i]
		if !d.sel.selects(t.Name) || !isQuantizedDType(t.DType) {
			continue
		}
		if !codec.IsQTensor(t.DType) && !codec.CanDecode(t.DType) {
			return nil, &TensorError{Tensor: t.Name, Msg: fmt.Sprintf("its dtype %s cannot be decoded (decodable block types: q8_0, q4_0, q4_1, q5_0, q5_1, q2_K–q6_K, q8_K, tq1_0, tq2_0, mxfp4, iq4_nl, iq4_xs)", t.DType), Input: true}
		}
		if err := convertTensor(p, i, t, d.to); err != nil {
			return nil, err
		}
		n++
	}
	p.Decisions = append([]plugin.Decision{{Msg: fmt.Sprintf("%d tensors decoded to %s", n, d.to)}}, p.Decisions...)
	return p, nil
}
