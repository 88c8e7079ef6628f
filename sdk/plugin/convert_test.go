package plugin

import (
	"reflect"
	"testing"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// A sink's plan crosses the wire whole: conversions, drops, notes and files
// in order, and empty lists stay empty; with its conversions as messages,
// and as a packed list of the planned manifest's tensors.
func TestPlanSurvivesTheWire(t *testing.T) {
	m := &tensor.Manifest{Tensors: []tensor.TensorInfo{{Name: "c"}, {Name: "b"}, {Name: "a"}}}
	for _, p := range []*SinkPlan{
		{},
		{
			EmbedsSignature: true,
			Convert:         []Conversion{{Tensor: "a", To: tensor.Q8_0, Reason: "dtype"}, {Tensor: "b", To: tensor.F16}},
			Drop:            []Decision{{Tensor: "rotary", Msg: "llama.cpp computes it"}},
			Notes:           []Decision{{Msg: "converted as llama"}, {Tensor: "c", Msg: "kept f32"}},
			Files:           []PlannedFile{{Path: "out.gguf", Size: 4096, Tensors: 3}},
		},
	} {
		for _, packed := range []bool{false, true} {
			msg := planToProto(p, m, packed)
			if packed != (len(msg.PackedConvert) > 0) && len(p.Convert) > 0 || len(msg.PackedConvert) > 0 && len(msg.Convert) > 0 {
				t.Errorf("packed %v: %d conversions as messages and %d bytes packed", packed, len(msg.Convert), len(msg.PackedConvert))
			}
			if got, err := planFromProto(msg, m); err != nil || !reflect.DeepEqual(got, p) {
				t.Errorf("plan %+v came back as %+v, %v (packed %v)", p, got, err, packed)
			}
		}
	}
}
