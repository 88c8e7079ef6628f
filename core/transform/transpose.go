package transform

import (
	"encoding/binary"
	"fmt"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/sluice-ml/sluice/sdk/bytesize"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

func init() {
	Register("transpose", Factory{
		Doc: "Permutes the axes of the matched tensors physically: output axis i is input axis axes[i] " +
			"(axes = [1, 0] turns a JAX/Flax [in, out] kernel into PyTorch's [out, in]). Tensors with another " +
			"number of dimensions are left alone. Leading axes that stay in place are streamed slice by slice; " +
			"otherwise the whole tensor is held in memory twice.",
		Spec: hcldec.ObjectSpec{
			"match":   &hcldec.AttrSpec{Name: "match", Type: cty.List(cty.String)},
			"exclude": &hcldec.AttrSpec{Name: "exclude", Type: cty.List(cty.String)},
			"axes":    &hcldec.AttrSpec{Name: "axes", Type: cty.List(cty.Number)},
		},
		New: newTranspose,
	})
}

type transpose struct {
	sel  selection
	axes []int
}

func newTranspose(cfg cty.Value) (Transform, error) {
	a := newAttrs(cfg)
	tr := &transpose{}
	var err error
	if tr.sel, err = parseSelection(a); err != nil {
		return nil, err
	}
	if tr.sel.match.empty() {
		return nil, plugin.ConfigErrorf("match", "name the tensors to transpose, e.g. match = [\"*.kernel\"]")
	}
	v := a.get("axes")
	if v.IsNull() {
		tr.axes = []int{1, 0}
	} else {
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			bf := e.AsBigFloat()
			n, acc := bf.Int64()
			if acc != 0 || n < 0 || n > 63 {
				return nil, plugin.ConfigErrorf("axes", "axes must be whole numbers from 0 to the number of dimensions − 1")
			}
			tr.axes = append(tr.axes, int(n))
		}
	}
	seen := make([]bool, len(tr.axes))
	for _, x := range tr.axes {
		if x >= len(tr.axes) || seen[x] {
			return nil, plugin.ConfigErrorf("axes", "%v is not a permutation of 0 … %d", tr.axes, len(tr.axes)-1)
		}
		seen[x] = true
	}
	if len(tr.axes) < 2 {
		return nil, plugin.ConfigErrorf("axes", "give at least two axes")
	}
	return tr, nil
}

func (tr *transpose) Plan(in *tensor.Manifest) (*Plan, error) {
	p := Identity(in)
	n := 0
	for i := range in.Tensors {
		t := &in.Tensors[i]
		if !tr.sel.selects(t.Name) {
			continue
		}
		if len(t.Shape) != len(tr.axes) {
			p.Decisions = append(p.Decisions, plugin.Decision{Tensor: t.Name, Msg: fmt.Sprintf("kept: %d dimensions, axes %v need %d", len(t.Shape), tr.axes, len(tr.axes))})
			continue
		}
		info, ok := t.DType.Info()
		if !ok || info.Kind == tensor.KindBlock || info.Kind == tensor.KindQTensor || info.BlockSize != 1 {
			return nil, &TensorError{Tensor: t.Name, Msg: fmt.Sprintf("is %s; only tensors of plain elements can be transposed (dequantize it first, or transpose before quantizing)", t.DType), Config: true}
		}
		op := newTransposeOp(t.Shape, tr.axes, info.BlockBytes)
		out := t.Clone()
		out.Location = nil
		out.Shape = op.outShape
		p.Out.Tensors[i] = out
		p.Mappings[i].Ops = []Op{op}
		msg := fmt.Sprintf("%v → %v", t.Shape, out.Shape)
		if op.keep == 0 {
			msg += fmt.Sprintf(" (whole-tensor op: needs %s in memory at once, input and output)", bytesize.Human(2*t.Size))
		} else {
			msg += fmt.Sprintf(" (streamed in slices of %s)", bytesize.Human(op.unit))
		}
		p.Decisions = append(p.Decisions, plugin.Decision{Tensor: t.Name, Msg: msg})
		n++
	}
	if n == 0 {
		p.Decisions = append(p.Decisions, plugin.Decision{Msg: fmt.Sprintf("no tensor matches %q with %d dimensions", tr.sel.match.patterns, len(tr.axes))})
	}
	return p, nil
}

// transposeOp permutes the axes of a row-major tensor. The leading axes
// that the permutation leaves in place are not touched, so a unit is one
// slice over the remaining axes.
type transposeOp struct {
	inShape, outShape []uint64
	axes              []int
	elem              uint64
	keep              int    // leading axes left in place
	unit              uint64 // bytes per unit (a slice over the moved axes)
	sub               []uint64
	subAxes           []int
}

func newTransposeOp(shape []uint64, axes []int, elem uint64) *transposeOp {
	op := &transposeOp{inShape: append([]uint64(nil), shape...), axes: append([]int(nil), axes...), elem: elem}
	op.outShape = make([]uint64, len(shape))
	for i, a := range axes {
		op.outShape[i] = shape[a]
	}
	for op.keep < len(axes) && axes[op.keep] == op.keep {
		op.keep++
	}
	op.sub = shape[op.keep:]
	for _, a := range axes[op.keep:] {
		op.subAxes = append(op.subAxes, a-op.keep)
	}
	op.unit = elem
	for _, d := range op.sub {
		op.unit *= d
	}
	return op
}

func (o *transposeOp) String() string {
	return fmt.Sprintf("transpose %v → %v", o.inShape, o.outShape)
}

func (o *transposeOp) UnitBytes() (uint64, uint64) { return o.unit, o.unit }

func (o *transposeOp) Apply(dst, src []byte) error {
	if o.unit == 0 {
		return nil
	}
	if uint64(len(src))%o.unit != 0 || len(dst) != len(src) {
		return fmt.Errorf("transpose: %d bytes are not whole slices of %d", len(src), o.unit)
	}
	for off := uint64(0); off < uint64(len(src)); off += o.unit {
		permuteAxes(dst[off:off+o.unit], src[off:off+o.unit], o.sub, o.subAxes, o.elem)
	}
	return nil
}

// permuteAxes writes src (row-major over shape) to dst with its axes permuted:
// dst axis i is src axis axes[i]. Two dimensions go through a tiled loop
// that stays within the caches; more go element by element with an index
// counter.
func permuteAxes(dst, src []byte, shape []uint64, axes []int, elem uint64) {
	if len(shape) == 2 && axes[0] == 1 {
		transpose2D(dst, src, shape[0], shape[1], elem)
		return
	}
	rank := len(shape)
	// Strides of src, in elements.
	srcStride := make([]uint64, rank)
	s := uint64(1)
	for i := rank - 1; i >= 0; i-- {
		srcStride[i] = s
		s *= shape[i]
	}
	total := s
	// Walk dst in order; idx counts over the dst shape.
	outShape := make([]uint64, rank)
	step := make([]uint64, rank) // src stride of each dst axis
	for i, a := range axes {
		outShape[i] = shape[a]
		step[i] = srcStride[a]
	}
	idx := make([]uint64, rank)
	var from uint64
	for d := uint64(0); d < total; d++ {
		copy(dst[d*elem:(d+1)*elem], src[from*elem:(from+1)*elem])
		for k := rank - 1; k >= 0; k-- {
			idx[k]++
			from += step[k]
			if idx[k] < outShape[k] {
				break
			}
			from -= step[k] * outShape[k]
			idx[k] = 0
		}
	}
}

// transpose2D turns a rows×cols matrix into cols×rows in tiles of 64×64
// elements, moving 2-, 4- and 8-byte elements as words.
func transpose2D(dst, src []byte, rows, cols, elem uint64) {
	const tile = 64
	for r0 := uint64(0); r0 < rows; r0 += tile {
		r1 := min(r0+tile, rows)
		for c0 := uint64(0); c0 < cols; c0 += tile {
			c1 := min(c0+tile, cols)
			switch elem {
			case 2:
				for r := r0; r < r1; r++ {
					for c := c0; c < c1; c++ {
						binary.LittleEndian.PutUint16(dst[2*(c*rows+r):], binary.LittleEndian.Uint16(src[2*(r*cols+c):]))
					}
				}
			case 4:
				for r := r0; r < r1; r++ {
					for c := c0; c < c1; c++ {
						binary.LittleEndian.PutUint32(dst[4*(c*rows+r):], binary.LittleEndian.Uint32(src[4*(r*cols+c):]))
					}
				}
			case 8:
				for r := r0; r < r1; r++ {
					for c := c0; c < c1; c++ {
						binary.LittleEndian.PutUint64(dst[8*(c*rows+r):], binary.LittleEndian.Uint64(src[8*(r*cols+c):]))
					}
				}
			default:
				for r := r0; r < r1; r++ {
					for c := c0; c < c1; c++ {
						copy(dst[(c*rows+r)*elem:(c*rows+r+1)*elem], src[(r*cols+c)*elem:(r*cols+c+1)*elem])
					}
				}
			}
		}
	}
}
