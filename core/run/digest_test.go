package run

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// reportingSink is a sink that commits files already on disk and reports
// the digests it is given.
type reportingSink struct {
	plugin.Sink
	opts plugin.BeginOptions
	arts []plugin.Artifact
}

func (s *reportingSink) Begin(ctx context.Context, m *tensor.Manifest, opts plugin.BeginOptions) error {
	s.opts = opts
	return nil
}

func (s *reportingSink) Commit(ctx context.Context) ([]plugin.Artifact, error) {
	return append([]plugin.Artifact(nil), s.arts...), nil
}

// TestDigestingSinkUsesTheSinksDigests checks that the run asks sinks for
// digests, keeps the ones a sink reports without reading the file, and
// reads only the files whose digest is missing.
func TestDigestingSinkUsesTheSinksDigests(t *testing.T) {
	dir := t.TempDir()
	reported, unreported := filepath.Join(dir, "a.bin"), filepath.Join(dir, "b.bin")
	for _, p := range []string{reported, unreported} {
		if err := os.WriteFile(p, []byte("bytes of "+p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A digest that is not the file's proves the file was not read again.
	claimed := strings.Repeat("ab", 32)
	inner := &reportingSink{arts: []plugin.Artifact{
		{Path: reported, Size: uint64(len("bytes of " + reported)), SHA256: claimed},
		{Path: unreported, Size: uint64(len("bytes of " + unreported))},
	}}
	sink := digestingSink{Sink: inner}
	ctx := context.Background()
	if err := sink.Begin(ctx, &tensor.Manifest{}, plugin.BeginOptions{SigningKeyID: "k"}); err != nil {
		t.Fatal(err)
	}
	if !inner.opts.Digests || inner.opts.SigningKeyID != "k" {
		t.Fatalf("the sink was begun with %+v, want Digests set and the other options kept", inner.opts)
	}
	arts, err := sink.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256([]byte("bytes of " + unreported))
	if arts[0].SHA256 != claimed {
		t.Errorf("the sink's digest of %s was replaced by %s", reported, arts[0].SHA256)
	}
	if arts[1].SHA256 != hex.EncodeToString(want[:]) {
		t.Errorf("%s: digest %q, want %x", unreported, arts[1].SHA256, want)
	}
}
