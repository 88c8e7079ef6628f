package transform

import (
	"fmt"
	"strings"

	"github.com/sluice-ml/sluice/sdk/codec"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// target is a dtype a transform converts to, with the scale layout when it
// is a QTensor.
type target struct {
	dtype tensor.DType
	// keep leaves the tensor as it is.
	keep    bool
	scaling codec.QScaling
}

func (t target) String() string {
	if t.keep {
		return "keep"
	}
	s := string(t.dtype)
	switch {
	case t.scaling.Block != 0:
		s += fmt.Sprintf(" (scale per block of %d)", t.scaling.Block)
	case t.scaling.PerAxis:
		s += fmt.Sprintf(" (scale per index of axis %d)", t.scaling.Axis)
	case codec.IsQTensor(t.dtype):
		s += " (one scale)"
	}
	return s
}

// parseTarget reads a type name: "keep"; a registry dtype ("f16", "bf16",
// "q4_K", case-insensitive); an apsim QTensor format ("int8", "int4", "fp8"
// = "fp8_e4m3", "fp8_e5m2", "fp6", "fp4", or any "qt_…" name — the scaled
// bf16 QTensor is "qt_bf16", since "bf16" is the plain dtype). The QTensor
// scale layout comes from axis or block.
func parseTarget(name string, a attrs, attrName string) (target, error) {
	if strings.EqualFold(name, "keep") {
		return target{keep: true}, nil
	}
	var t target
	if f, err := codec.ParseQFormat(name); err == nil && (strings.HasPrefix(strings.ToLower(name), "qt_") || !isRegistryDType(name)) {
		t.dtype = f.DType
	} else if dt, err := tensor.ParseDType(name); err == nil {
		t.dtype = dt
	} else {
		return t, configErr(a, attrName, "unknown type %q: give a dtype (f32, f16, bf16, f8_e4m3, q8_0, q4_K, …), an apsim QTensor format (int8, int4, fp8, fp8_e5m2, fp6, fp4, qt_bf16) or \"keep\"", name)
	}
	axis, hasAxis, err := a.integer("axis", -64, 63)
	if err != nil {
		return t, err
	}
	block, hasBlock, err := a.integer("block", 1, 1<<40)
	if err != nil {
		return t, err
	}
	if (hasAxis || hasBlock) && !codec.IsQTensor(t.dtype) {
		attr := "axis"
		if hasBlock {
			attr = "block"
		}
		return t, configErr(a, attr, "only applies to apsim QTensor types (int8, int4, fp8, fp6, fp4, qt_bf16), not %s", t.dtype)
	}
	if hasAxis && hasBlock {
		return t, configErr(a, "block", "set axis or block, not both")
	}
	t.scaling = codec.QScaling{PerAxis: hasAxis, Axis: int(axis), Block: uint64(block)}
	return t, nil
}

func isRegistryDType(name string) bool {
	_, err := tensor.ParseDType(name)
	return err == nil
}

func configErr(a attrs, attr, format string, args ...any) error {
	return &plugin.ConfigError{Attribute: attr, Msg: a.path + fmt.Sprintf(format, args...)}
}

// kindOf returns the dtype's kind, or 0 when it is unknown.
func kindOf(dt tensor.DType) tensor.Kind {
	info, ok := dt.Info()
	if !ok {
		return 0
	}
	return info.Kind
}

func isIntegerDType(dt tensor.DType) bool {
	info, ok := dt.Info()
	return ok && info.IsInteger()
}

func isFloatDType(dt tensor.DType) bool { return kindOf(dt) == tensor.KindFloat }

func isQuantizedDType(dt tensor.DType) bool {
	info, ok := dt.Info()
	return ok && info.IsQuantized()
}

// blockSize returns the elements per block of a block dtype, 1 otherwise.
func blockSize(dt tensor.DType) uint64 {
	info, ok := dt.Info()
	if !ok || info.Kind != tensor.KindBlock {
		return 1
	}
	return info.BlockSize
}

// rowLen returns the innermost dimension (1 for a scalar).
func rowLen(shape []uint64) uint64 {
	if len(shape) == 0 {
		return 1
	}
	return shape[len(shape)-1]
}

// fits reports whether a tensor of this shape can be stored as dt: block
// types need rows that are a whole number of blocks.
func fits(dt tensor.DType, shape []uint64) bool {
	return rowLen(shape)%blockSize(dt) == 0
}
