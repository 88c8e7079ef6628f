// Package apsim is Sluice's plugin for apsim checkpoints (.apsim): safetensors
// files whose __metadata__ adds physical units, compressed tensors
// (QTensors, stored as their codes plus a NAME__qscale tensor), the
// checkpoint's metadata, a SHA-256 over the tensor table and the data, an
// optional HMAC-SHA256 signature, and Hugging Face-style sharding with the
// digest of every shard in the index.
//
// docs/formats/apsim.md is the byte-level specification. The source
// verifies every file on load unless told not to, then hands plain tensors
// to the core as file references; the sink writes atomically and embeds
// signatures itself.
package apsim

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"

	"github.com/sluice-ml/sluice/sdk/plugin"
	st "github.com/sluice-ml/sluice/sdk/safetensors"
)

// Version is the plugin's version.
const Version = "0.1.0"

// Plugin returns the apsim plugin.
func Plugin() *plugin.Plugin {
	src := plugin.NewSourceType("apsim",
		"Reads an apsim checkpoint: a .apsim file, a NAME.apsim.index.json shard set, or any shard of one (the whole set is read). "+
			"Every file's SHA-256 is checked unless verify = false; with a key, the signature is checked too.",
		func(ctx context.Context, cfg *SourceConfig) (plugin.Source, error) { return OpenSource(cfg) })
	src.Extensions = []string{Extension, IndexSuffix}
	src.Probe = Probe
	sink := plugin.NewSinkType("apsim",
		"Writes an apsim checkpoint: one .apsim file (a valid safetensors file), or NAME-0000i-of-0000N.apsim shards plus NAME.apsim.index.json "+
			"above the shard size or when a shard stage assigns tensors. Keeps units, QTensors and metadata; records SHA-256 digests; signs with a key.",
		func(ctx context.Context, cfg *SinkConfig) (plugin.Sink, error) { return NewSink(cfg) })
	sink.Extensions = []string{Extension}
	return &plugin.Plugin{Name: "apsim", Version: Version, Sources: []plugin.SourceType{src}, Sinks: []plugin.SinkType{sink}}
}

// SourceConfig configures the source.
type SourceConfig struct {
	Path   string          `hcl:"path" doc:"A .apsim file, a NAME.apsim.index.json, or any shard of a set (the whole set is read)."`
	Verify *bool           `hcl:"verify,optional" doc:"Check every file's SHA-256 on load (default true). Giving a key always verifies."`
	Key    json.RawMessage `hcl:"key,optional,sensitive" doc:"Check the signature: true for your per-user key, or a shared secret string. Refuses unsigned files."`
}

// SinkConfig configures the sink.
type SinkConfig struct {
	Path     string            `hcl:"path" doc:"Output path, NAME.apsim; a sharded set is written as NAME-0000i-of-0000N.apsim plus NAME.apsim.index.json."`
	Shard    string            `hcl:"shard,optional" doc:"Largest shard, e.g. \"4GB\" (default) or \"512MiB\"; tensors assigned by a shard stage override it."`
	Sign     bool              `hcl:"sign,optional" doc:"Sign with your per-user key (created on first use in your configuration directory)."`
	Key      string            `hcl:"key,optional,sensitive" doc:"Sign with this shared secret."`
	Metadata map[string]string `hcl:"metadata,optional" doc:"Metadata to record (added to, and overriding, the checkpoint's own)."`
}

// Probe recognises apsim files by their header and sets by their index name.
func Probe(p string) int {
	if strings.HasSuffix(p, IndexSuffix) {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return 90
		}
		return 0
	}
	f, err := os.Open(p)
	if err != nil {
		return 0
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return 0
	}
	var head [8]byte
	if _, err := io.ReadFull(f, head[:]); err != nil {
		return 0
	}
	n := uint64(head[0]) | uint64(head[1])<<8 | uint64(head[2])<<16 | uint64(head[3])<<24 |
		uint64(head[4])<<32 | uint64(head[5])<<40 | uint64(head[6])<<48 | uint64(head[7])<<56
	if n < 2 || n > st.MaxHeaderSize || int64(n)+8 > fi.Size() {
		return 0
	}
	// The metadata comes first in headers apsim writes; look at its start.
	buf := make([]byte, min(n, 1<<16))
	if _, err := io.ReadFull(f, buf); err != nil || buf[0] != '{' {
		return 0
	}
	if bytes.Contains(buf, []byte(`"format":"`+FormatName+`"`)) {
		return 95
	}
	return 0
}
