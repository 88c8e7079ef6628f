package plugin

import (
	"fmt"

	pb "github.com/sluice-ml/sluice/sdk/proto/v1"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// maxValueDepth caps the nesting of metadata arrays on the wire.
const maxValueDepth = 16

// valueToProto converts a value to its wire form; with packed, string arrays
// travel as one block (Value.packed_strs, protocol 1.5), for a peer that
// announced it takes them.
func valueToProto(v tensor.Value, packed bool) *pb.Value {
	out := &pb.Value{Type: uint32(v.Type()), Elem: uint32(v.Elem()), Bits: v.Bits()}
	switch {
	case v.Type() == tensor.TypeString:
		out.Str, _ = v.Str()
	case v.Type() == tensor.TypeArray && v.Elem() == tensor.TypeString && packed:
		layout, _ := v.PackedStrings()
		out.PackedStrs = &pb.PackedStrings{Count: uint64(v.Len()), Layout: layout}
	case v.Type() == tensor.TypeArray && v.Elem() == tensor.TypeString:
		out.Strs, _ = v.StringSlice()
	case v.Type() == tensor.TypeArray && v.Elem() == tensor.TypeArray:
		items, _ := v.Items()
		out.Items = make([]*pb.Value, len(items))
		for i, it := range items {
			out.Items[i] = valueToProto(it, packed)
		}
	case v.Type() == tensor.TypeArray:
		out.Raw, _ = v.Raw()
	}
	return out
}

func valueFromProto(p *pb.Value, depth int) (tensor.Value, error) {
	if p == nil {
		return tensor.Value{}, fmt.Errorf("missing metadata value")
	}
	t := tensor.ValueType(p.Type)
	if !t.Valid() {
		return tensor.Value{}, fmt.Errorf("invalid metadata type %d", p.Type)
	}
	switch t {
	case tensor.TypeString:
		return tensor.StringValue(p.Str), nil
	case tensor.TypeArray:
		if depth >= maxValueDepth {
			return tensor.Value{}, fmt.Errorf("metadata arrays nested deeper than %d", maxValueDepth)
		}
		elem := tensor.ValueType(p.Elem)
		switch {
		case !elem.Valid():
			return tensor.Value{}, fmt.Errorf("invalid metadata array element type %d", p.Elem)
		case elem == tensor.TypeString && p.PackedStrs != nil:
			return packedFromProto(p)
		case elem == tensor.TypeString:
			return tensor.StringArray(p.Strs), nil
		case elem == tensor.TypeArray:
			items := make([]tensor.Value, len(p.Items))
			for i, it := range p.Items {
				v, err := valueFromProto(it, depth+1)
				if err != nil {
					return tensor.Value{}, err
				}
				items[i] = v
			}
			return tensor.NestedArray(items)
		}
		return tensor.ArrayValue(elem, p.Raw)
	}
	return tensor.Scalar(t, p.Bits)
}

// packedFromProto takes a string array sent as one block, checking its
// layout and, as protobuf checks a string field, that every string is UTF-8.
func packedFromProto(p *pb.Value) (tensor.Value, error) {
	if len(p.Strs) != 0 {
		return tensor.Value{}, fmt.Errorf("string array sent both as strings and as a block")
	}
	if p.PackedStrs.Count > uint64(len(p.PackedStrs.Layout))/8 {
		return tensor.Value{}, fmt.Errorf("string array of %d strings in a block of %d bytes", p.PackedStrs.Count, len(p.PackedStrs.Layout))
	}
	v, err := tensor.PackedStringArray(p.PackedStrs.Layout, int(p.PackedStrs.Count))
	if err != nil {
		return tensor.Value{}, err
	}
	if bad := checkValueStrings(v); bad != "" {
		return tensor.Value{}, fmt.Errorf("%s of a string array is not valid UTF-8", bad)
	}
	return v, nil
}

// ManifestToProto converts a manifest to its wire form, as every peer reads
// it.
func ManifestToProto(m *tensor.Manifest) *pb.Manifest { return manifestToProto(m, wireForms{}) }

// wireForms says which of the protocol's packed forms a peer announced it
// takes.
type wireForms struct {
	// strings: string arrays as one block each (protocol 1.5).
	strings bool
	// tensors: a manifest's tensors as one packed tensor table (1.8).
	tensors bool
}

// manifestToProto is ManifestToProto in the packed forms the peer takes.
func manifestToProto(m *tensor.Manifest, forms wireForms) *pb.Manifest {
	out := &pb.Manifest{Metadata: make([]*pb.KeyValue, 0, m.Metadata.Len())}
	m.Metadata.All(func(k string, v tensor.Value) bool {
		out.Metadata = append(out.Metadata, &pb.KeyValue{Key: k, Value: valueToProto(v, forms.strings)})
		return true
	})
	if forms.tensors {
		out.PackedTensors = appendTensorTable(nil, m.Tensors)
		return out
	}
	out.Tensors = make([]*pb.TensorInfo, len(m.Tensors))
	for i := range m.Tensors {
		t := &m.Tensors[i]
		pt := &pb.TensorInfo{Name: t.Name, Dtype: string(t.DType), Shape: t.Shape, Size: t.Size, Attrs: t.Attrs}
		if t.Location != nil {
			pt.Location = &pb.FileRef{Path: t.Location.Path, Offset: t.Location.Offset, Length: t.Location.Length}
		}
		out.Tensors[i] = pt
	}
	return out
}

// ManifestFromProto converts a manifest from its wire form, checking every
// value. Dtypes are not checked here: a manifest may list tensors of dtypes
// the receiver cannot decode. The manifest shares memory with p (shapes,
// attributes, the strings of a packed tensor table), so p must not change
// afterwards: decode it, hand it over, drop it.
func ManifestFromProto(p *pb.Manifest) (*tensor.Manifest, error) {
	if p == nil {
		return nil, fmt.Errorf("missing manifest")
	}
	m := &tensor.Manifest{}
	for _, kv := range p.Metadata {
		v, err := valueFromProto(kv.Value, 0)
		if err != nil {
			return nil, fmt.Errorf("metadata key %q: %w", kv.Key, err)
		}
		m.Metadata.Set(kv.Key, v)
	}
	if len(p.PackedTensors) > 0 {
		if len(p.Tensors) > 0 {
			return nil, fmt.Errorf("tensors %w", errBothForms)
		}
		ts, err := parseTensorTable(p.PackedTensors)
		if err != nil {
			return nil, fmt.Errorf("packed tensor table: %w", err)
		}
		m.Tensors = ts
		return m, nil
	}
	m.Tensors = make([]tensor.TensorInfo, len(p.Tensors))
	for i, pt := range p.Tensors {
		t := tensor.TensorInfo{Name: pt.Name, DType: tensor.DType(pt.Dtype), Shape: pt.Shape, Size: pt.Size, Attrs: pt.Attrs}
		if pt.Location != nil {
			t.Location = &tensor.FileRef{Path: pt.Location.Path, Offset: pt.Location.Offset, Length: pt.Location.Length}
		}
		m.Tensors[i] = t
	}
	return m, nil
}

func schemaToProto(s *Schema) *pb.Schema {
	if s == nil {
		return nil
	}
	out := &pb.Schema{}
	for _, a := range s.Attributes {
		out.Attributes = append(out.Attributes, &pb.Attribute{Name: a.Name, Type: a.Type, Required: a.Required, Sensitive: a.Sensitive, Doc: a.Doc})
	}
	return out
}

func schemaFromProto(p *pb.Schema) *Schema {
	s := &Schema{}
	for _, a := range p.GetAttributes() {
		s.Attributes = append(s.Attributes, Attribute{Name: a.Name, Type: a.Type, Required: a.Required, Sensitive: a.Sensitive, Doc: a.Doc})
	}
	return s
}

// infoToProto describes a plugin to the host; i.Arena, i.WriteLanes and
// i.DirectWrites say what this process was given at spawn.
func infoToProto(i *Info) *pb.GetInfoResponse {
	out := &pb.GetInfoResponse{
		Name:          i.Name,
		Version:       i.Version,
		ProtocolMinor: uint32(i.ProtocolMinor),
		Capabilities: &pb.Capabilities{Arena: i.Arena, FileRef: true, MaxInline: maxInline, WriteSeries: i.WriteSeries, WriteData: i.WriteData,
			PackedStrings: i.PackedStrings, WriteLanes: i.WriteLanes, DirectWrites: i.DirectWrites, PackedTensors: i.PackedTensors},
	}
	add := func(kind pb.Component_Kind, cs []ComponentInfo) {
		for _, c := range cs {
			out.Components = append(out.Components, &pb.Component{
				Kind: kind, Name: c.Name, Doc: c.Doc, Schema: schemaToProto(c.Schema), Extensions: c.Extensions, Probes: c.Probes,
			})
		}
	}
	add(pb.Component_SOURCE, i.Sources)
	add(pb.Component_SINK, i.Sinks)
	return out
}

func infoFromProto(p *pb.GetInfoResponse) *Info {
	i := &Info{Name: p.Name, Version: p.Version, ProtocolMinor: int(p.ProtocolMinor),
		Arena: p.GetCapabilities().GetArena(), FileRefs: p.GetCapabilities().GetFileRef(),
		WriteSeries: p.GetCapabilities().GetWriteSeries(), WriteData: p.GetCapabilities().GetWriteData(),
		PackedStrings: p.GetCapabilities().GetPackedStrings(), WriteLanes: p.GetCapabilities().GetWriteLanes(),
		DirectWrites: p.GetCapabilities().GetDirectWrites(), PackedTensors: p.GetCapabilities().GetPackedTensors()}
	for _, c := range p.Components {
		ci := ComponentInfo{Name: c.Name, Doc: c.Doc, Schema: schemaFromProto(c.Schema), Extensions: c.Extensions, Probes: c.Probes}
		switch c.Kind {
		case pb.Component_SOURCE:
			i.Sources = append(i.Sources, ci)
		case pb.Component_SINK:
			i.Sinks = append(i.Sinks, ci)
		}
	}
	return i
}

// planToProto converts the plan of the manifest m; with packed, its
// conversions travel as one packed list (protocol 1.8), for a host that
// announced it takes one.
func planToProto(p *SinkPlan, m *tensor.Manifest, packed bool) *pb.PlanResponse {
	out := &pb.PlanResponse{EmbedsSignature: p.EmbedsSignature, Partitions: p.Partitions}
	if packed && len(p.Convert) > 0 {
		out.PackedConvert, packed = appendConversions(nil, p.Convert, m)
	}
	// A plan may convert tens of thousands of tensors: each list is made
	// at its size, its messages in one array.
	if !packed {
		out.Convert = messagesOf(p.Convert, func(m *pb.Conversion, c Conversion) {
			m.Tensor, m.Dtype, m.Reason = c.Tensor, string(c.To), c.Reason
		})
	}
	out.Drop = messagesOf(p.Drop, decisionToProto)
	out.Notes = messagesOf(p.Notes, decisionToProto)
	for _, f := range p.Files {
		out.Files = append(out.Files, &pb.PlannedFile{Path: f.Path, Size: f.Size, Tensors: uint32(f.Tensors)})
	}
	return out
}

// planFromProto converts the plan of the manifest m (a packed list of
// conversions names m's tensors by index).
func planFromProto(p *pb.PlanResponse, m *tensor.Manifest) (*SinkPlan, error) {
	out := &SinkPlan{EmbedsSignature: p.EmbedsSignature, Partitions: p.Partitions}
	if len(p.PackedConvert) > 0 {
		if len(p.Convert) > 0 {
			return nil, fmt.Errorf("conversions %w", errBothForms)
		}
		cs, err := parseConversions(p.PackedConvert, m)
		if err != nil {
			return nil, fmt.Errorf("packed conversions: %w", err)
		}
		out.Convert = cs
	}
	if len(p.Convert) > 0 {
		out.Convert = valuesOf(p.Convert, func(c *pb.Conversion) Conversion {
			return Conversion{Tensor: c.Tensor, To: tensor.DType(c.Dtype), Reason: c.Reason}
		})
	}
	out.Drop = valuesOf(p.Drop, decisionFromProto)
	out.Notes = valuesOf(p.Notes, decisionFromProto)
	for _, f := range p.Files {
		out.Files = append(out.Files, PlannedFile{Path: f.Path, Size: f.Size, Tensors: int(f.Tensors)})
	}
	return out, nil
}

// messagesOf converts each element of src into a message, the messages
// allocated in one array rather than one at a time; nil for none.
func messagesOf[T, M any](src []T, fill func(*M, T)) []*M {
	if len(src) == 0 {
		return nil
	}
	out := make([]*M, len(src))
	msgs := make([]M, len(src))
	for i, v := range src {
		fill(&msgs[i], v)
		out[i] = &msgs[i]
	}
	return out
}

// valuesOf converts each received message of src; nil for none.
func valuesOf[M, T any](src []*M, conv func(*M) T) []T {
	if len(src) == 0 {
		return nil
	}
	out := make([]T, len(src))
	for i, m := range src {
		out[i] = conv(m)
	}
	return out
}

func decisionToProto(m *pb.Decision, d Decision) { m.Tensor, m.Msg = d.Tensor, d.Msg }

func decisionFromProto(d *pb.Decision) Decision { return Decision{Tensor: d.Tensor, Msg: d.Msg} }
