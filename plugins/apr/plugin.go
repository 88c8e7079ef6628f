// Package apr reads and writes APR v2, the native model format of
// aprender (the Rust ML library), in both of its byte layouts:
//
//   - the layout aprender's code implements ("aprender", the default for
//     writing): magic "APR\0", a 64-byte header protected by a CRC32,
//     JSON metadata padded to 64 bytes, a binary tensor index, 64-byte
//     aligned tensor data and a CRC32 footer;
//   - the layout of aprender's format specification page ("spec"): magic
//     "APR\x02", a 32-byte header and a 16-byte footer holding a CRC-64 and
//     the total size, each tensor compressed on its own when compression
//     is asked for.
//
// The files written by default are the ones aprender's own reader accepts.
// Reading checks the header CRC and the footer checksum before anything
// else (unless told not to), so a damaged byte anywhere is reported as
// ErrChecksum. Readers work through an io.ReaderAt (Reader, OpenFile) or a
// plain io.Reader front to back (StreamReader).
//
// The package is a Sluice format plugin (Plugin): source "apr" and sink
// "apr". It also registers aprender's own quantized dtypes, Q4 ("apr_q4")
// and Q8 ("apr_q8"), with their encoders. docs/formats/apr.md describes
// every byte and decision.
package apr

import (
	"github.com/sluice-ml/sluice/sdk/plugin"
)

// Version is the plugin's version.
const Version = "0.1.0"

// Plugin returns the APR plugin: source "apr" and sink "apr".
func Plugin() *plugin.Plugin {
	src := plugin.NewSourceType[SourceConfig]("apr",
		"Reads an APR v2 file (aprender's model format), in aprender's layout or its format page's, compressed or not, verifying its checksums.",
		openSource)
	src.Extensions = []string{".apr"}
	src.Probe = Probe
	snk := plugin.NewSinkType[SinkConfig]("apr",
		"Writes an APR v2 file that aprender loads (or, with layout = \"spec\", the format page's layout), optionally LZ4- or zstd-compressed, one file per shard.",
		openSink)
	snk.Extensions = []string{".apr"}
	return &plugin.Plugin{Name: "apr", Version: Version, Sources: []plugin.SourceType{src}, Sinks: []plugin.SinkType{snk}}
}
