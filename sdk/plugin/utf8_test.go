package plugin

import (
	"context"
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/sluice-ml/sluice/sdk/proto/v1"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

type manifestSource struct{ m *tensor.Manifest }

func (s *manifestSource) Describe(context.Context) (*tensor.Manifest, error) { return s.m, nil }
func (s *manifestSource) Open(context.Context, string) (io.ReadCloser, error) {
	return nil, io.EOF
}
func (s *manifestSource) Close() error { return nil }

// TestInvalidUTF8IsBadInput is a regression test: a source whose manifest
// holds a string of invalid UTF-8 (a GGUF vocabulary of raw bytes) made the
// plugin's Describe fail as a gRPC marshalling error, an internal failure.
// It is now a bad-input error that says which string.
func TestInvalidUTF8IsBadInput(t *testing.T) {
	for name, m := range map[string]*tensor.Manifest{
		"string value": func() *tensor.Manifest {
			m := &tensor.Manifest{}
			m.Metadata.Set("tokenizer.ggml.tokens", tensor.StringArray([]string{"a", "\xe4\xbd"}))
			m.Tensors = []tensor.TensorInfo{{Name: "w", DType: tensor.U8, Shape: []uint64{1}, Size: 1, Location: &tensor.FileRef{Path: "/models/m.gguf", Length: 1}}}
			return m
		}(),
		"string value in one block": func() *tensor.Manifest {
			m := &tensor.Manifest{}
			v, err := tensor.PackedStringArray([]byte("\x01\x00\x00\x00\x00\x00\x00\x00a\x02\x00\x00\x00\x00\x00\x00\x00\xe4\xbd"), 2)
			if err != nil {
				t.Fatal(err)
			}
			m.Metadata.Set("tokenizer.ggml.tokens", v)
			return m
		}(),
		"tensor name": {Tensors: []tensor.TensorInfo{{Name: "w\xff", DType: tensor.U8, Shape: []uint64{1}, Size: 1}}},
		"attribute":   {Tensors: []tensor.TensorInfo{{Name: "w", DType: tensor.U8, Shape: []uint64{1}, Size: 1, Attrs: map[string]string{"unit": "\xff"}}}},
	} {
		srv := newServer(&Plugin{Name: "x", Version: "0"}, nil)
		srv.sources[1] = &sourceSession{src: &manifestSource{m: m}}
		_, err := sourceServer{server: srv}.Describe(context.Background(), &pb.SessionRequest{Session: 1})
		st, _ := status.FromError(err)
		if st.Code() != codes.InvalidArgument || !IsBadInput(fromStatus(err)) || !strings.Contains(st.Message(), "not valid UTF-8") {
			t.Errorf("%s: got %v, want a bad-input error about UTF-8", name, err)
		}
		if name == "string value" && !strings.Contains(st.Message(), "/models/m.gguf") {
			t.Errorf("%s: the error does not name the file the tensors lie in: %v", name, err)
		}
	}
}
