package onnx

// modelBytes is a model whose graph holds the given initializers.
func modelBytes(tensors ...[]byte) []byte {
	var g pb
	g = g.str(graphName, "g")
	for _, tp := range tensors {
		g = g.bytes(graphInitializer, tp)
	}
	return pb(nil).varint(modelIRVersion, 8).bytes(modelGraph, g)
}

// rawF32 is an f32 initializer of the given dims with raw_data of n bytes.
func rawF32(name string, n int, dims ...uint64) []byte {
	t := pb(nil)
	for _, d := range dims {
		t = t.varint(tensorDims, d)
	}
	return t.varint(tensorDataType, 1).str(tensorName, name).bytes(tensorRawData, make([]byte, n))
}
