package run

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluice-ml/sluice/core/pipeline"
	"github.com/sluice-ml/sluice/sdk/atomicfile"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

// A run manifest (NAME.sluice-run.json) sits beside each sink's outputs and
// says where they came from: the pipeline's digest and variables (sensitive
// ones redacted), every input file's size and SHA-256, every plugin's name,
// version, protocol and binary digest, every output's size and SHA-256, when
// the run started and ended, and the Sluice version. `sluice run
// --skip-unchanged` compares it with what a new run would read; `sluice
// finalize` merges the manifests of a partitioned run's partitions.
//
// NAME is the sink's `path` attribute (the manifest of a sink writing
// dist/model.safetensors is dist/model.safetensors.sluice-run.json, whether
// the sink writes one file or a shard set); a sink without a `path`
// attribute names it after its first planned file. Each manifest describes
// the whole run's inputs, pipeline and plugins, and lists its own sink's
// outputs.

// ManifestSuffix ends the name of every run manifest.
const ManifestSuffix = ".sluice-run.json"

// ManifestFormat and ManifestVersion identify a run manifest.
const (
	ManifestFormat  = "sluice-run-manifest"
	ManifestVersion = 1
)

// maxManifestSize bounds the manifest read back.
const maxManifestSize = 64 << 20

// Manifest is the content of a run manifest.
type Manifest struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	// Sluice is the version of the sluice that ran.
	Sluice string `json:"sluice_version"`
	// SluiceSHA256 is the digest of the sluice binary, which ran the
	// transforms and serves the built-in plugins.
	SluiceSHA256 string `json:"sluice_sha256"`
	// Stage is the sink whose outputs Outputs lists, e.g. "sink.release".
	Stage    string         `json:"stage"`
	Pipeline PipelineRecord `json:"pipeline"`
	// Partition is set in the manifest of one partition of a partitioned
	// run (`sluice run --partition`); `sluice finalize` merges them into the
	// manifest of the whole run.
	Partition *PartitionRecord `json:"partition,omitempty"`
	// Partitions is the partition count of a run that `sluice finalize`
	// completed; 0 for a run on one machine.
	Partitions int       `json:"partitions,omitempty"`
	Started    time.Time `json:"started"`
	Finished   time.Time `json:"finished"`
	// Inputs are absolute paths, sorted.
	Inputs  []FileRecord   `json:"inputs"`
	Plugins []PluginRecord `json:"plugins"`
	// Outputs are relative to the manifest's directory, in the order the
	// sink committed them (detached signatures after the files they sign).
	Outputs []FileRecord `json:"outputs"`
}

// PipelineRecord identifies the pipeline and its variables.
type PipelineRecord struct {
	// Digest is the SHA-256 of the pipeline files (pipeline.Pipeline.Digest).
	Digest string `json:"digest"`
	// Variables holds every variable's value as JSON; a sensitive one reads
	// "(sensitive)".
	Variables map[string]json.RawMessage `json:"variables"`
	// Sensitive fingerprints the sensitive variables' values so that a new
	// secret is noticed without the secret being written:
	// "hmac-sha256:SALT:MAC", MAC = HMAC-SHA256(SALT, name NUL value NUL …)
	// over the values in name order, SALT 16 random bytes. A fingerprint
	// reveals no more than the detached signatures a signing key makes
	// (HMACs of known messages under the key), and the salt defeats
	// precomputed tables.
	Sensitive string `json:"sensitive,omitempty"`
}

// Redacted is a sensitive variable's value in a manifest.
const Redacted = `"(sensitive)"`

// FileRecord is one input or output file.
type FileRecord struct {
	Path   string `json:"path"`
	Size   uint64 `json:"size"`
	SHA256 string `json:"sha256,omitempty"`
	// ModTime is the file's modification time when it was hashed (RFC 3339,
	// nanoseconds). A later check that finds the same size and time trusts
	// SHA256 without reading the file. It is left out when the file was
	// modified too close to its hashing for the time to prove anything.
	ModTime string `json:"mtime,omitempty"`
}

// PluginRecord is one plugin a run used.
type PluginRecord struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Protocol is the plugin protocol version it speaks, e.g. "1.2".
	Protocol string `json:"protocol"`
	// SHA256 is the digest of the binary that serves it: the sluice binary
	// itself for a built-in.
	SHA256  string `json:"sha256"`
	Builtin bool   `json:"builtin,omitempty"`
}

// PartitionRecord names one partition of a partitioned run.
type PartitionRecord struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// ManifestPathFromConfig returns the run manifest path of a sink from its
// `path` attribute, without planning; false when the sink has none.
func ManifestPathFromConfig(st *pipeline.Stage) (string, bool) {
	p, ok := st.StringAttr("path")
	if !ok || p == "" {
		return "", false
	}
	return p + ManifestSuffix, true
}

// ManifestPath returns the run manifest path of a planned sink: from its
// `path` attribute, else after its first planned file; "" when it plans no
// file.
func ManifestPath(st *pipeline.Stage, sp *plugin.SinkPlan) string {
	if p, ok := ManifestPathFromConfig(st); ok {
		return p
	}
	if sp != nil && len(sp.Files) > 0 {
		return sp.Files[0].Path + ManifestSuffix
	}
	return ""
}

// PartitionManifestPath returns where partition part writes the manifest
// whose whole-run name is path.
func PartitionManifestPath(path string, part Partition) string {
	return strings.TrimSuffix(path, ManifestSuffix) + fmt.Sprintf(".partition-%d-of-%d", part.Index, part.Count) + ManifestSuffix
}

// ReadManifest reads and checks a run manifest.
func ReadManifest(path string) (*Manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxManifestSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(b) > maxManifestSize {
		return nil, &ManifestError{Path: path, Msg: fmt.Sprintf("is larger than %d bytes; not a run manifest", maxManifestSize)}
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, &ManifestError{Path: path, Msg: "is not a run manifest: " + err.Error()}
	}
	if m.Format != ManifestFormat {
		return nil, &ManifestError{Path: path, Msg: fmt.Sprintf("format is %q, want %q", m.Format, ManifestFormat)}
	}
	if m.Version != ManifestVersion {
		return nil, &ManifestError{Path: path, Msg: fmt.Sprintf("version %d is not supported (this sluice reads version %d)", m.Version, ManifestVersion)}
	}
	return &m, nil
}

// ManifestError reports a run manifest that cannot be used.
type ManifestError struct {
	Path string
	Msg  string
}

func (e *ManifestError) Error() string { return e.Path + ": " + e.Msg }

// BadInput marks a damaged manifest as bad input.
func (e *ManifestError) BadInput() bool { return true }

// Encode renders a manifest as indented JSON with a final newline.
func (m *Manifest) Encode() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// WriteManifest writes m to path atomically.
func WriteManifest(path string, m *Manifest) error { return writeManifest(path, m, true) }

// writeManifest writes m to path atomically, synced before its rename
// unless fsync is false.
func writeManifest(path string, m *Manifest, fsync bool) error {
	b, err := m.Encode()
	if err != nil {
		return err
	}
	f, err := atomicfile.Create(path, int64(len(b)))
	if err != nil {
		return err
	}
	if !fsync {
		f.SkipFsync()
	}
	if _, err := f.Write(b); err != nil {
		f.Abort()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Commit()
}

// outputRecords turns a sink's committed artifacts into records relative to
// the manifest's directory, with sizes and times from the files as they are
// now and digests from the artifacts (hashing those that have none).
func outputRecords(manifestPath string, arts []plugin.Artifact) ([]FileRecord, error) {
	dir, err := filepath.Abs(filepath.Dir(manifestPath))
	if err != nil {
		return nil, err
	}
	out := make([]FileRecord, 0, len(arts))
	for _, a := range arts {
		abs, err := filepath.Abs(a.Path)
		if err != nil {
			return nil, err
		}
		rel, err := filepath.Rel(dir, abs)
		if err != nil {
			rel = abs
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return nil, fmt.Errorf("output %s: %w", a.Path, err)
		}
		rec := FileRecord{Path: filepath.ToSlash(rel), Size: uint64(fi.Size()), SHA256: a.SHA256, ModTime: formatTime(fi.ModTime())}
		if rec.SHA256 == "" || (a.Size != 0 && a.Size != rec.Size) {
			d, err := hashFile(abs)
			if err != nil {
				return nil, err
			}
			// An output's time is only checked for later changes, never
			// trusted for its digest, so it is kept however recent.
			rec.SHA256, rec.Size = d.SHA256, d.Size
		}
		out = append(out, rec)
	}
	return out, nil
}

// resolveOutput returns an output record's path on disk.
func resolveOutput(manifestPath, rel string) string {
	p := filepath.FromSlash(rel)
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(filepath.Dir(manifestPath), p)
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func sameTime(recorded string, t time.Time) bool {
	if recorded == "" {
		return false
	}
	r, err := time.Parse(time.RFC3339Nano, recorded)
	return err == nil && r.Equal(t)
}
