package transform

import (
	"errors"
	"fmt"
	"math/bits"

	"github.com/sluice-ml/sluice/sdk/codec"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// ConvertOp returns the op that turns the bytes of in into dtype to (a cast,
// a quantization, a dequantization, or both). The shape is unchanged; the
// returned TensorInfo describes the output. A dtype the codecs cannot read or
// write is an error that names the tensor and the dtype.
//
// A QTensor target keeps the scale layout of a QTensor input and otherwise
// gets one scale per tensor; see ConvertOpScaled to choose it.
func ConvertOp(in *tensor.TensorInfo, to tensor.DType) (Op, tensor.TensorInfo, error) {
	var s codec.QScaling
	if codec.IsQTensor(in.DType) {
		if q, err := codec.QTensorOf(in); err == nil {
			s = q.Scaling()
		}
	}
	return ConvertOpScaled(in, to, s)
}

// ConvertOpScaled is ConvertOp with the scale layout of a QTensor target
// (ignored for other targets): one scale per tensor, per index of an axis,
// or per block of a row. Converting to a non-QTensor dtype drops the
// input's QTensor attributes.
func ConvertOpScaled(in *tensor.TensorInfo, to tensor.DType, s codec.QScaling) (Op, tensor.TensorInfo, error) {
	out := in.Clone()
	out.DType = to
	out.Location = nil
	delete(out.Attrs, codec.AttrQAxis)
	delete(out.Attrs, codec.AttrQBlock)
	if codec.IsQTensor(to) {
		q, err := codec.NewQTensor(to, in.Shape, s)
		if err != nil {
			return nil, out, &TensorError{Tensor: in.Name, Msg: fmt.Sprintf("cannot become %s: %v", to, err)}
		}
		q.SetAttrs(&out)
	}
	if codec.IsQTensor(in.DType) || codec.IsQTensor(to) {
		return qtensorConvert(in, &out)
	}
	if !codec.CanDecode(in.DType) {
		return nil, out, &TensorError{Tensor: in.Name, Msg: fmt.Sprintf("its dtype %s cannot be decoded, so it cannot become %s", in.DType, to), Input: true}
	}
	if !codec.CanEncode(to) {
		return nil, out, &TensorError{Tensor: in.Name, Msg: fmt.Sprintf("cannot encode dtype %s", to)}
	}
	size, err := to.ShapeByteSize(in.Shape)
	if err != nil {
		return nil, out, &TensorError{Tensor: in.Name, Msg: fmt.Sprintf("cannot become %s: %v", to, err)}
	}
	out.Size = size
	unit := lcmBlock(in.DType, to)
	inBytes, _ := in.DType.ByteSize(unit)
	outBytes, _ := to.ByteSize(unit)
	return convertOp{from: in.DType, to: to, unit: unit, inBytes: inBytes, outBytes: outBytes}, out, nil
}

// lcmBlock returns the least number of elements that is a whole number of
// blocks of both dtypes.
func lcmBlock(a, b tensor.DType) uint64 {
	ia, _ := a.Info()
	ib, _ := b.Info()
	x, y := max(ia.BlockSize, 1), max(ib.BlockSize, 1)
	g := x
	for h := y; h != 0; {
		g, h = h, g%h
	}
	hi, lo := bits.Mul64(x/g, y)
	if hi != 0 {
		return x
	}
	return lo
}

// convertOp converts between two dtypes of the codec. It is a value, so
// that two conversions of a tensor alike (two sinks asking for it in the
// same dtype) are equal ops and the plan runs them once.
type convertOp struct {
	from, to          tensor.DType
	unit              uint64
	inBytes, outBytes uint64
}

func (o convertOp) String() string { return fmt.Sprintf("%s → %s", o.from, o.to) }

func (o convertOp) UnitBytes() (uint64, uint64) { return o.inBytes, o.outBytes }

func (o convertOp) Apply(dst, src []byte) error {
	n := uint64(len(src)) / o.inBytes * o.unit
	// A block whose scale is NaN or infinite is damaged input.
	if err := codec.CheckScales(o.from, src); err != nil {
		return err
	}
	return codec.Convert(o.from, o.to, dst, src, int(n))
}

// qtensorConvert handles conversions from or to an apsim QTensor, whose
// scales make the whole tensor one unit.
func qtensorConvert(in, out *tensor.TensorInfo) (Op, tensor.TensorInfo, error) {
	n, err := in.Elements()
	if err != nil {
		return nil, *out, &TensorError{Tensor: in.Name, Msg: err.Error()}
	}
	if codec.IsQTensor(out.DType) {
		size, err := codec.QTensorSize(out)
		if err != nil {
			return nil, *out, &TensorError{Tensor: in.Name, Msg: fmt.Sprintf("cannot become %s: %v", out.DType, err)}
		}
		out.Size = size
	} else {
		if !codec.CanEncode(out.DType) {
			return nil, *out, &TensorError{Tensor: in.Name, Msg: fmt.Sprintf("cannot encode dtype %s", out.DType)}
		}
		size, err := out.DType.ShapeByteSize(out.Shape)
		if err != nil {
			return nil, *out, &TensorError{Tensor: in.Name, Msg: fmt.Sprintf("cannot become %s: %v", out.DType, err)}
		}
		out.Size = size
	}
	if !codec.IsQTensor(in.DType) && !codec.CanDecode(in.DType) {
		return nil, *out, &TensorError{Tensor: in.Name, Msg: fmt.Sprintf("its dtype %s cannot be decoded", in.DType), Input: true}
	}
	inInfo := in.Clone()
	return &wholeConvert{in: inInfo, out: out.Clone(), n: n}, *out, nil
}

type wholeConvert struct {
	in, out tensor.TensorInfo
	n       uint64
}

func (o *wholeConvert) String() string { return fmt.Sprintf("%s → %s", o.in.DType, o.out.DType) }

func (o *wholeConvert) UnitBytes() (uint64, uint64) { return o.in.Size, o.out.Size }

func (o *wholeConvert) Apply(dst, src []byte) error {
	vals := make([]float32, o.n)
	var err error
	if codec.IsQTensor(o.in.DType) {
		err = codec.DecodeQTensor(&o.in, vals, src)
	} else if err = codec.CheckScales(o.in.DType, src); err == nil {
		err = codec.DecodeFloat32(o.in.DType, vals, src)
	}
	if err != nil {
		return err // the runner names the tensor
	}
	if codec.IsQTensor(o.out.DType) {
		return codec.EncodeQTensor(&o.out, dst, vals)
	}
	return codec.EncodeFloat32(o.out.DType, dst, vals)
}

// blameConfig marks a conversion error that is not the input's fault as the
// configuration's: the stage asked for a conversion the tensor cannot take.
func blameConfig(err error) error {
	var te *TensorError
	if errors.As(err, &te) && !te.Input {
		te.Config = true
	}
	return err
}
