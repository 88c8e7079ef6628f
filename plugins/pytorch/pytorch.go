// Package pytorch is Sluice's source plugin for PyTorch checkpoints: files
// torch.save writes (pytorch_model.bin, .pt, .pth), Hugging Face's sharded
// layout (pytorch_model-0000i-of-0000N.bin with pytorch_model.bin.index.json)
// and Hugging Face model directories holding either.
//
// It reads checkpoints safely: the pickle inside is interpreted by a
// restricted unpickler (package pickle) that accepts only the globals
// torch.save writes for tensors and state dicts (Allowlist) and runs no
// code. It reads lazily: Describe reads the zip directory and the pickle,
// never the storages, and contiguous tensors of uncompressed storages carry
// a file reference so their bytes are copied without passing through the
// plugin. It does not write PyTorch checkpoints.
package pytorch

import (
	"archive/zip"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluice-ml/sluice/sdk/plugin"
)

// Version is the plugin's version.
const Version = "0.1.0"

// Plugin returns the pytorch plugin: one source type, "pytorch".
func Plugin() *plugin.Plugin {
	src := plugin.NewSourceType("pytorch",
		"Reads PyTorch checkpoints written by torch.save (a state dict, or a dict holding one), sharded Hugging Face "+
			"checkpoints with pytorch_model.bin.index.json, and Hugging Face directories holding either. The pickle "+
			"is read by a restricted unpickler that runs no code.",
		func(ctx context.Context, cfg *Config) (plugin.Source, error) { return NewSource(*cfg) })
	src.Extensions = []string{".bin", ".pt", ".pth", ".ckpt"}
	src.Probe = Probe
	return &plugin.Plugin{Name: "pytorch", Version: Version, Sources: []plugin.SourceType{src}}
}

// Probe reports how sure the source is that it reads path, from its
// content: 100 for a zip with an <archive>/data.pkl entry, 90 for a shard
// index naming .bin shards, 50 for the pre-1.6 format (which Describe
// refuses with an explanation), 60 for a directory holding a PyTorch
// checkpoint and no safetensors files (30 when it has some), else 0.
func Probe(p string) int {
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	if fi.IsDir() {
		plan, err := resolvePath(p)
		if err != nil || len(plan.files) == 0 {
			return 0
		}
		if st, _ := filepath.Glob(filepath.Join(p, "*.safetensors")); len(st) > 0 {
			return 30
		}
		return 60
	}
	if strings.HasSuffix(p, ".bin.index.json") {
		plan, err := readIndex(p)
		if err == nil && len(plan.files) > 0 {
			return 90
		}
		return 0
	}
	f, err := os.Open(p)
	if err != nil {
		return 0
	}
	defer f.Close()
	head := make([]byte, len(legacyMagic))
	n, _ := f.ReadAt(head, 0)
	head = head[:n]
	if bytes.Equal(head, legacyMagic) {
		return 50
	}
	if !bytes.HasPrefix(head, []byte("PK\x03\x04")) {
		return 0
	}
	zr, err := zip.NewReader(f, fi.Size())
	if zr == nil || (err != nil && err != zip.ErrInsecurePath) {
		return 0
	}
	for _, zf := range zr.File {
		if dir, base := splitPrefix(zf.Name); dir != "" && base == "data.pkl" {
			return 100
		}
	}
	return 0
}
