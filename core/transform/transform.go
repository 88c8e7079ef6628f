// Package transform holds the built-in stages that run inside the core —
// quantize, cast, dequantize, transpose, permute, rename, filter, metadata,
// shard, sign — and the Op interface through which they change tensor
// bytes. docs/transforms.md documents every stage.
//
// A transform first plans on metadata alone: it maps the input manifest to
// an output manifest and says, per output tensor, which input it comes from
// and which Ops turn the input's bytes into the output's. The runner applies
// the Ops chunk by chunk, in parallel, inside the memory budget.
package transform

import (
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// Op changes the bytes of one tensor. Ops work on units: a chunk handed to
// Apply always holds whole units, so an op never sees half a quantization
// block or half a row group.
type Op interface {
	// String describes the op in plans, e.g. "bf16 → q8_0".
	String() string
	// UnitBytes returns the size of one unit in the input and in the output.
	UnitBytes() (in, out uint64)
	// Apply converts src, a whole number of input units, into dst, the same
	// number of output units. It is safe to call concurrently on different
	// chunks.
	Apply(dst, src []byte) error
}

// Mapping says where one output tensor comes from.
type Mapping struct {
	// From names the input tensor.
	From string
	// Ops turn the input's bytes into the output's, in order; none when the
	// bytes pass unchanged.
	Ops []Op
}

// Plan is a transform's decision for one input manifest.
type Plan struct {
	// Out is the output manifest.
	Out *tensor.Manifest
	// Mappings holds one entry per output tensor, in the order of Out.Tensors.
	Mappings []Mapping
	// Decisions are shown by `sluice plan`.
	Decisions []plugin.Decision
	// SigningKey is set by a sign transform for the sinks downstream. It is
	// never shown.
	SigningKey []byte
	// SigningKeyID names the key without revealing it.
	SigningKeyID string
}

// Transform is a built-in stage.
type Transform interface {
	// Plan maps an input manifest to an output manifest. It must be a pure
	// function of the manifest and the stage's configuration.
	Plan(in *tensor.Manifest) (*Plan, error)
}

// Factory builds a transform from its decoded configuration.
type Factory struct {
	// Doc describes the transform in one paragraph.
	Doc string
	// Spec decodes the block's body (without the core's input and enabled).
	Spec hcldec.Spec
	// Sensitive names attributes whose values must never be shown.
	Sensitive []string
	// New builds the transform from the value Spec decoded.
	New func(cfg cty.Value) (Transform, error)
}

var registry = map[string]Factory{}

// Register adds a transform type. It panics on a duplicate name.
func Register(name string, f Factory) {
	if _, dup := registry[name]; dup {
		panic("transform: registered twice: " + name)
	}
	registry[name] = f
}

// Lookup returns the factory of a transform type.
func Lookup(name string) (Factory, bool) {
	f, ok := registry[name]
	return f, ok
}

// Names lists the registered transform types, sorted.
func Names() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Identity returns a plan that passes every tensor through unchanged.
func Identity(in *tensor.Manifest) *Plan {
	p := &Plan{Out: in.Clone(), Mappings: make([]Mapping, len(in.Tensors))}
	for i, t := range in.Tensors {
		p.Mappings[i] = Mapping{From: t.Name}
	}
	return p
}

// TensorError reports a problem with one tensor during planning.
type TensorError struct {
	Tensor string
	Msg    string
	// Config marks the stage's configuration as the cause (a rule that does
	// not fit the tensor); Input marks the checkpoint (a dtype that cannot
	// be decoded). With neither, the error is internal.
	Config, Input bool
}

func (e *TensorError) Error() string { return fmt.Sprintf("tensor %q: %s", e.Tensor, e.Msg) }

// BadConfig reports whether the configuration caused the error.
func (e *TensorError) BadConfig() bool { return e.Config }

// BadInput reports whether the input caused the error.
func (e *TensorError) BadInput() bool { return e.Input }
