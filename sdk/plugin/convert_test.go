package plugin

import (
	"reflect"
	"testing"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// A sink's plan crosses the wire whole: conversions, drops, notes and files
// in order, and empty lists stay empty.
func TestPlanSurvivesTheWire(t *testing.T) {
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
		if got := planFromProto(planToProto(p)); !reflect.DeepEqual(got, p) {
			t.Errorf("plan %+v came back as %+v", p, got)
		}
	}
}
