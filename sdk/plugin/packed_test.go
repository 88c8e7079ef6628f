package plugin

import (
	"context"
	"encoding/binary"
	"reflect"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	pb "github.com/sluice-ml/sluice/sdk/proto/v1"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// vocabManifest has a string array in each form a Value holds one, and one
// inside an array of arrays.
func vocabManifest(t *testing.T) *tensor.Manifest {
	t.Helper()
	layout, _ := tensor.StringArray([]string{"Ġthe", "", "é"}).PackedStrings()
	packed, err := tensor.PackedStringArray(layout, 3)
	if err != nil {
		t.Fatal(err)
	}
	nested, _ := tensor.NestedArray([]tensor.Value{tensor.StringArray([]string{"x", "y"})})
	m := &tensor.Manifest{Tensors: tableTensors()}
	m.Metadata.Set("tokenizer.ggml.tokens", packed)
	m.Metadata.Set("tokenizer.ggml.merges", tensor.StringArray([]string{"a b", "c d"}))
	m.Metadata.Set("nested", nested)
	return m
}

// manifestSink keeps the manifests it is given, and asks for convert.
type manifestSink struct {
	slowSink
	mu      sync.Mutex
	plan    *tensor.Manifest
	begin   *tensor.Manifest
	convert []Conversion
}

func (s *manifestSink) Plan(ctx context.Context, in *tensor.Manifest) (*SinkPlan, error) {
	s.mu.Lock()
	s.plan = in
	s.mu.Unlock()
	return &SinkPlan{Convert: s.convert}, nil
}

func (s *manifestSink) Begin(ctx context.Context, m *tensor.Manifest, _ BeginOptions) error {
	s.mu.Lock()
	s.begin = m
	s.mu.Unlock()
	return nil
}

// wireManifests records the manifests crossing the connection, and the
// last plan.
type wireManifests struct {
	mu   sync.Mutex
	seen map[string]*pb.Manifest // by method
	plan *pb.PlanResponse
}

func (w *wireManifests) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	w.mu.Lock()
	defer w.mu.Unlock()
	method := info.FullMethod[strings.LastIndex(info.FullMethod, "/")+1:]
	switch m := req.(type) {
	case *pb.PlanRequest:
		w.seen[method] = m.Manifest
	case *pb.BeginRequest:
		w.seen[method] = m.Manifest
	}
	switch r := resp.(type) {
	case *pb.DescribeResponse:
		w.seen[method] = r.Manifest
	case *pb.PlanResponse:
		w.plan = r
	}
	return resp, err
}

// packedKeys lists the keys whose string arrays crossed as one block, and
// those that crossed as strings.
func packedKeys(m *pb.Manifest) (packed, strs []string) {
	for _, kv := range m.Metadata {
		v := kv.Value
		if len(v.Items) > 0 {
			v = v.Items[0]
		}
		switch {
		case v.PackedStrs != nil:
			packed = append(packed, kv.Key)
		case len(v.Strs) > 0:
			strs = append(strs, kv.Key)
		}
	}
	return packed, strs
}

// packedTensors says whether m's tensors crossed as a packed tensor table,
// and fails t if they crossed both ways.
func packedTensors(t *testing.T, method string, m *pb.Manifest) bool {
	t.Helper()
	if len(m.PackedTensors) > 0 && len(m.Tensors) > 0 {
		t.Errorf("%s: the tensors crossed both as messages and as a table", method)
	}
	return len(m.PackedTensors) > 0
}

// TestManifestsCrossInBlocks: between two peers that announce them, the
// manifest's string arrays cross as one block each, its tensors as one table
// both ways and the plan's conversions as one list, and arrive equal; to a
// peer that does not, as strings and as a message per tensor and
// conversion.
func TestManifestsCrossInBlocks(t *testing.T) {
	m := vocabManifest(t)
	convert := []Conversion{{Tensor: m.Tensors[4].Name, To: tensor.Q8_0, Reason: "r"}, {Tensor: m.Tensors[1].Name, To: tensor.Q8_0, Reason: "r"}}
	sink := &manifestSink{convert: convert}
	wire := &wireManifests{seen: map[string]*pb.Manifest{}}
	c, _ := connect(t, testPlugin(&manifestSource{m: m}, sink), 0, grpc.UnaryInterceptor(wire.intercept))
	if !c.info.PackedStrings || !c.info.PackedTensors {
		t.Fatal("the SDK's plugin does not announce packed strings and tensors")
	}
	ctx := context.Background()
	src, err := c.OpenSource(ctx, "hang", Config{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := src.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Metadata.Equal(&m.Metadata) || !reflect.DeepEqual(got.Tensors, m.Tensors) {
		t.Error("the described manifest changed on the way")
	}
	sk, err := c.OpenSink(ctx, "hang", Config{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := sk.Plan(ctx, got)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(plan.Convert, convert) || len(wire.plan.PackedConvert) == 0 || len(wire.plan.Convert) != 0 {
		t.Errorf("the plan's conversions crossed as %d messages and %d bytes, and arrived as %+v", len(wire.plan.Convert), len(wire.plan.PackedConvert), plan.Convert)
	}
	if err := sk.Begin(ctx, got, BeginOptions{}); err != nil {
		t.Fatal(err)
	}
	if !sink.plan.Metadata.Equal(&m.Metadata) || !sink.begin.Metadata.Equal(&m.Metadata) ||
		!reflect.DeepEqual(sink.plan.Tensors, m.Tensors) || !reflect.DeepEqual(sink.begin.Tensors, m.Tensors) {
		t.Error("the manifest the sink was given changed on the way")
	}
	for _, method := range []string{"Describe", "Plan", "Begin"} {
		packed, strs := packedKeys(wire.seen[method])
		if len(packed) != 3 || len(strs) != 0 {
			t.Errorf("%s: %v as blocks, %v as strings; want every string array as a block", method, packed, strs)
		}
		if !packedTensors(t, method, wire.seen[method]) {
			t.Errorf("%s: the tensors crossed as messages, want a table", method)
		}
	}

	// A plugin that does not announce them, and a host that does not.
	c.info.PackedStrings, c.info.PackedTensors = false, false
	if _, err := c.plugin.GetInfo(ctx, &pb.GetInfoRequest{HostProtocolMinor: 4}); err != nil {
		t.Fatal(err)
	}
	if plan, err = sk.Plan(ctx, got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(plan.Convert, convert) || len(wire.plan.PackedConvert) != 0 || len(wire.plan.Convert) != 2 {
		t.Errorf("to an older host, the plan's conversions crossed as %d messages and %d bytes, and arrived as %+v", len(wire.plan.Convert), len(wire.plan.PackedConvert), plan.Convert)
	}
	src2, err := c.OpenSource(ctx, "hang", Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src2.Describe(ctx); err != nil {
		t.Fatal(err)
	}
	for _, method := range []string{"Plan", "Describe"} {
		packed, strs := packedKeys(wire.seen[method])
		if len(packed) != 0 || len(strs) != 3 {
			t.Errorf("%s to an older peer: %v as blocks, %v as strings; want every string array as strings", method, packed, strs)
		}
		if packedTensors(t, method, wire.seen[method]) {
			t.Errorf("%s to an older peer: the tensors crossed as a table, want messages", method)
		}
	}
	if !sink.plan.Metadata.Equal(&m.Metadata) || !reflect.DeepEqual(sink.plan.Tensors, m.Tensors) {
		t.Error("the manifest sent as strings and messages changed on the way")
	}
}

func TestMalformedPackedStringsAreRefused(t *testing.T) {
	good := binary.LittleEndian.AppendUint64(nil, 2)
	good = append(good, "ok"...)
	bad := binary.LittleEndian.AppendUint64(nil, 1)
	bad = append(bad, 0xff)
	for _, tc := range []struct {
		name string
		v    *pb.Value
	}{
		{"a count past the block", &pb.Value{PackedStrs: &pb.PackedStrings{Count: 1 << 62, Layout: good}}},
		{"a string past the block", &pb.Value{PackedStrs: &pb.PackedStrings{Count: 1, Layout: good[:9]}}},
		{"bytes after the last string", &pb.Value{PackedStrs: &pb.PackedStrings{Count: 1, Layout: append(good, 0)}}},
		{"a string that is not UTF-8", &pb.Value{PackedStrs: &pb.PackedStrings{Count: 1, Layout: bad}}},
		{"strings and a block at once", &pb.Value{Strs: []string{"ok"}, PackedStrs: &pb.PackedStrings{Count: 1, Layout: good}}},
	} {
		tc.v.Type, tc.v.Elem = uint32(tensor.TypeArray), uint32(tensor.TypeString)
		_, err := ManifestFromProto(&pb.Manifest{Metadata: []*pb.KeyValue{{Key: "k", Value: tc.v}}})
		if err == nil || !strings.Contains(err.Error(), `"k"`) {
			t.Errorf("%s: %v, want an error naming the key", tc.name, err)
		}
	}
	v := &pb.Value{Type: uint32(tensor.TypeArray), Elem: uint32(tensor.TypeString), PackedStrs: &pb.PackedStrings{Count: 1, Layout: good}}
	m, err := ManifestFromProto(&pb.Manifest{Metadata: []*pb.KeyValue{{Key: "k", Value: v}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Metadata.Get("k"); got.Len() != 1 || got.Index(0).String() != `"ok"` {
		t.Errorf("a well-formed block read as %v", got)
	}
	if !proto.Equal(ManifestToProto(m).Metadata[0].Value, &pb.Value{Type: v.Type, Elem: v.Elem, Strs: []string{"ok"}}) {
		t.Error("ManifestToProto did not send a block read as one back as strings, as every peer reads them")
	}
}
