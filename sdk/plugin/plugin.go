// Package plugin is the contract between Sluice's core and its format plugins:
// the Source and Sink interfaces a plugin implements, the component table a
// plugin binary serves, Serve for the plugin's main, and the host-side client
// the core uses (in-process or over hashicorp/go-plugin).
//
// A plugin imports only sdk/... packages. Tensor bytes do not travel inside
// gRPC messages when both ends share a machine: see DataPlane.
package plugin

import (
	"context"
	"io"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// Source reads one checkpoint.
type Source interface {
	// Describe returns the checkpoint's manifest. It reads headers and
	// indexes only, never tensor data, whatever the size of the file.
	// A tensor whose bytes lie unchanged in a local file carries a Location,
	// so the core may read them itself.
	Describe(ctx context.Context) (*tensor.Manifest, error)
	// Open returns the bytes of one tensor exactly as the manifest describes
	// them (its dtype, row-major order, Size bytes), read front to back.
	Open(ctx context.Context, name string) (io.ReadCloser, error)
	// Close releases the files the source holds.
	Close() error
}

// Sink writes one checkpoint (one file or a set of files).
//
// The core calls Plan, then Begin, then Write for every tensor (several at
// once, in any order), then Commit; or Abort at any point after Begin.
type Sink interface {
	// Plan decides, from the manifest alone, the dtype each tensor must
	// arrive in and the files that will be written. It has no side effects.
	// The host does not change in afterwards, so a sink may keep it, and
	// what it decided, for the Begin that follows.
	Plan(ctx context.Context, in *tensor.Manifest) (*SinkPlan, error)
	// Begin creates the outputs under temporary names. m is the manifest as
	// it will arrive, after the conversions the plan asked for.
	Begin(ctx context.Context, m *tensor.Manifest, opts BeginOptions) error
	// Write receives all bytes of one tensor. Calls for different tensors
	// may run concurrently.
	Write(ctx context.Context, name string, data TensorData) error
	// Commit completes, syncs and renames every output into place, then
	// reports what was written.
	Commit(ctx context.Context) ([]Artifact, error)
	// Abort removes every temporary output. It may be called more than
	// once, and after a failed Commit.
	Abort(ctx context.Context) error
}

// FileWriteGatherer is implemented by a Sink that gathers concurrent
// writes of small tensors whose bytes lie in files into fewer operations, as
// the host's end of a plugin process's sink does (protocol 1.3's WriteFiles
// messages, for tensors of up to 1 MiB). The core keeps more such writes of
// small tensors in flight for it, so that there is more to gather; to a sink
// that makes every write itself, that would only add contention.
type FileWriteGatherer interface {
	// GathersFileWrites reports whether the sink gathers them.
	GathersFileWrites() bool
}

// GathersFileWrites reports whether s is a FileWriteGatherer that gathers.
func GathersFileWrites(s Sink) bool {
	g, ok := s.(FileWriteGatherer)
	return ok && g.GathersFileWrites()
}

// DataWriteGatherer is implemented by a Sink that gathers, likewise,
// concurrent writes of small tensors whose bytes lie whole in one chunk:
// tensors the core converted (protocol 1.4's WriteStart.data), in a slot of
// the host's arena (or a piece of one, Pieces) or, up to GatherInlineBelow
// bytes, on the heap. The core then runs more small trees at once for it,
// and moves their small outputs to pieces of shared slots so that their own
// slots need not wait for the writes.
type DataWriteGatherer interface {
	// GathersDataWrites reports whether the sink gathers them.
	GathersDataWrites() bool
}

// GathersDataWrites reports whether s is a DataWriteGatherer that gathers.
func GathersDataWrites(s Sink) bool {
	g, ok := s.(DataWriteGatherer)
	return ok && g.GathersDataWrites()
}

// SinkPlan is a sink's decision for one manifest.
type SinkPlan struct {
	// Convert lists tensors that must arrive in another dtype than the
	// incoming manifest says; the core inserts the cast or quantization.
	Convert []Conversion
	// Drop lists tensors the sink will not write, with the reason.
	Drop []Decision
	// Files lists the outputs, under their final names.
	Files []PlannedFile
	// Notes are per-tensor or whole-output decisions shown by `sluice plan`.
	Notes []Decision
	// EmbedsSignature reports that the sink writes a signing key's HMAC into
	// its own files. Otherwise a sign stage makes the core write a detached
	// signature beside each output.
	EmbedsSignature bool
	// Partitions reports that the sink honours BeginOptions.Shards and
	// BeginOptions.Finalize, so `sluice run --partition` may split its shards
	// between machines and `sluice finalize` completes the set. A sink that
	// leaves it false is always written whole, by one partition. (Protocol
	// 1.1.)
	Partitions bool
}

// Conversion asks for a tensor in another dtype.
type Conversion struct {
	Tensor string
	To     tensor.DType
	Reason string
}

// Decision is one line of a plan: what happens to a tensor (or to the whole
// output when Tensor is empty) and why.
type Decision struct {
	Tensor string
	Msg    string
}

// PlannedFile is one output file.
type PlannedFile struct {
	Path    string
	Size    uint64 // expected size in bytes; 0 when unknown before writing
	Tensors int
}

// BeginOptions carries what a sink needs beyond the manifest.
type BeginOptions struct {
	// SigningKey, when set, is the HMAC-SHA256 key of an upstream sign
	// stage. It is never logged, planned or echoed in errors.
	SigningKey []byte
	// SigningKeyID names the key without revealing it ("user key", "shared
	// secret"); it may be recorded in outputs.
	SigningKeyID string
	// Shards, when not empty, limits this sink to the files of these shards,
	// numbered from 1 as tensor.AttrShard numbers them: Begin creates only
	// those files, Write receives only their tensors, and Commit renames and
	// reports only them. Files that describe the whole set (an index, side
	// files) are left to a later sink begun with Finalize. Every shard file
	// must come out byte for byte as a whole run writes it. The core sets
	// Shards only for a sink whose plan says Partitions. (Protocol 1.1.)
	Shards []int
	// Finalize asks for the files that describe the whole set and nothing
	// else: every shard file was committed by earlier sinks begun with
	// Shards. No Write follows; Commit writes those files and reports them.
	// (Protocol 1.1.)
	Finalize bool
	// Digests asks for the SHA-256 of every file Commit reports
	// (Artifact.SHA256). A sink may ignore it: the core then reads the files
	// back itself. A sink that honours it can hash while it writes
	// (atomicfile.File.StartDigest) instead of after. (Protocol 1.2.)
	Digests bool
	// NoFsync says the user gave up durability against a crash of the
	// machine (sluice run --fsync=false): Commit may rename the outputs
	// without syncing them (atomicfile.File.SkipFsync), and CopyToFile then
	// leaves their writeback to the kernel. The rename must stay atomic.
	// A sink may ignore it. (Protocol 1.2.)
	NoFsync bool
	// KeepCache says the user wants the outputs to stay in the page cache
	// once written (sluice run --keep-cache): a next step reads them at
	// once. Files started with CreateOutput then keep their pages
	// (atomicfile.File.KeepCached) instead of dropping them behind their
	// early syncs. A sink may ignore it. (Protocol 1.10.)
	KeepCache bool
}

// TensorData is the bytes of one tensor, delivered to a sink front to back.
// Implementations also implement io.WriterTo, so io.Copy moves each chunk
// once.
type TensorData interface {
	io.Reader
	// Size is the total number of bytes.
	Size() uint64
	// File reports where the bytes lie unchanged in a local file, when they
	// do; a sink may then copy them itself (see CopyToFile).
	File() (tensor.FileRef, bool)
}

// Artifact is one committed output file.
type Artifact struct {
	Path   string
	Size   uint64
	SHA256 string // hex; empty when the sink did not compute it
}
