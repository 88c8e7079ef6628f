// Package hfdir carries what a Hugging Face checkpoint directory holds beside
// its weights: the JSON side files config.json, generation_config.json,
// tokenizer.json, tokenizer_config.json and special_tokens_map.json (the keys
// of tensor.HFFiles). A source reading such a directory puts them into its
// manifest's metadata, verbatim, so sinks can derive hyperparameters, the
// tokenizer and the chat template without reading files themselves.
package hfdir

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sluice-ml/sluice/sdk/binio"
	"github.com/sluice-ml/sluice/sdk/localpath"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// MaxFileBytes caps the size of one side file or index.
const MaxFileBytes = 256 << 20

// Carry sets, for each side file present in dir, in file-name order, the
// metadata key tensor.HFFiles gives it to the file's text, and, when dir
// holds a config.json, tensor.MetaHFModelName to ModelName(dir). Absent files
// are skipped. A present file must stay inside dir once symbolic links are
// resolved (links into the Hugging Face cache repository are fine; see
// sdk/localpath), be readable, hold at most MaxFileBytes and be valid JSON;
// otherwise Carry returns a bad-input error naming the file.
func Carry(md *tensor.Metadata, dir string) error {
	names := make([]string, 0, len(tensor.HFFiles))
	for n := range tensor.HFFiles {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(dir, n)
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if err := localpath.Inside(dir, p); err != nil {
			return &plugin.InputError{File: p, Msg: err.Error()}
		}
		b, err := ReadFile(p)
		if err != nil {
			return err
		}
		if !json.Valid(b) {
			return &binio.FormatError{File: p, Offset: -1, Msg: "not valid JSON"}
		}
		md.Set(tensor.HFFiles[n], tensor.StringValue(string(b)))
		if n == "config.json" {
			if name := ModelName(dir); name != "" {
				md.Set(tensor.MetaHFModelName, tensor.StringValue(name))
			}
		}
	}
	return nil
}

// ModelName returns a checkpoint's name from its directory: NAME for a
// snapshot in the Hugging Face cache (…/models--ORG--NAME/snapshots/REV),
// the directory's base name otherwise, and "" when dir has no usable name
// (the root, or a path that cannot be made absolute).
func ModelName(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	parent := filepath.Dir(abs)
	if filepath.Base(parent) == "snapshots" {
		repo := filepath.Base(filepath.Dir(parent))
		if rest, ok := strings.CutPrefix(repo, "models--"); ok {
			if i := strings.LastIndex(rest, "--"); i >= 0 {
				rest = rest[i+2:]
			}
			if rest != "" {
				return rest
			}
		}
	}
	base := filepath.Base(abs)
	if base == string(filepath.Separator) || base == "." {
		return ""
	}
	return base
}

// ReadFile reads a JSON file of a Hugging Face directory (a side file, a
// shard index) of at most MaxFileBytes. It returns a bad-input error naming
// the file when it cannot be opened or read, or is larger.
func ReadFile(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, &plugin.InputError{File: p, Msg: "cannot open", Err: err}
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, &plugin.InputError{File: p, Msg: "cannot read", Err: err}
	}
	if len(b) > MaxFileBytes {
		return nil, &binio.FormatError{File: p, Offset: MaxFileBytes, Msg: fmt.Sprintf("file is larger than the %d-byte limit", MaxFileBytes)}
	}
	return b, nil
}
