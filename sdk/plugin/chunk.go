package plugin

import (
	"context"
	"fmt"
	"io"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// ChunkReader yields a tensor's bytes as chunks, in order. The caller owns
// each chunk it receives and must Release it.
type ChunkReader interface {
	// NextChunk returns the next chunk, or io.EOF after the last one.
	NextChunk(ctx context.Context) (*Chunk, error)
	// Close stops reading early and releases what the reader holds.
	Close() error
}

// ChunkSource is implemented by sources that fill the host's arena slots
// themselves (the client of an out-of-process plugin). The host uses it
// instead of Open when it has a pool to give.
type ChunkSource interface {
	// OpenChunks reads a tensor into slots of pool. Every chunk but the last
	// holds the largest multiple of align bytes that is at most maxChunk
	// (and a slot).
	OpenChunks(ctx context.Context, name string, pool *Pool, align, maxChunk int) (ChunkReader, error)
}

// ReadChunks cuts the size bytes of r into chunks in slots of pool: every
// chunk but the last holds the largest multiple of align bytes that is at
// most maxChunk (0: a slot). It fails when r ends early.
func ReadChunks(r io.Reader, size uint64, pool *Pool, align, maxChunk int) ChunkReader {
	return &poolReader{r: r, left: size, pool: pool, chunkLen: chunkLen(limit(pool.Arena().SlotSize(), maxChunk), align)}
}

func limit(n, maxChunk int) int {
	if maxChunk > 0 && maxChunk < n {
		return maxChunk
	}
	return n
}

// chunkLen returns the largest multiple of align that fits in n bytes.
func chunkLen(n, align int) int {
	slotSize := n
	if align <= 1 {
		return slotSize
	}
	n = slotSize / align * align
	if n == 0 {
		// A single unit larger than a slot cannot be cut on its boundary;
		// such units are split and callers reassemble whole units.
		return slotSize
	}
	return n
}

type poolReader struct {
	r        io.Reader
	left     uint64
	off      uint64
	pool     *Pool
	chunkLen int
}

func (p *poolReader) NextChunk(ctx context.Context) (*Chunk, error) {
	if p.left == 0 {
		return nil, io.EOF
	}
	c, err := p.pool.Get(ctx)
	if err != nil {
		return nil, err
	}
	n := uint64(p.chunkLen)
	if n > p.left {
		n = p.left
	}
	c.Data = c.Data[:n]
	c.Prefault(int(n))
	if _, err := io.ReadFull(p.r, c.Data); err != nil {
		c.Release()
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, fmt.Errorf("tensor data ended %d bytes early", p.left)
		}
		return nil, err
	}
	c.Offset = p.off
	p.off += n
	p.left -= n
	return c, nil
}

func (p *poolReader) Close() error {
	if c, ok := p.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// NewChunkData returns TensorData that delivers the chunks of cr. When file
// is non-nil the bytes also lie unchanged in that file and a sink may copy
// them from there instead (then the chunks are never read). Chunks are
// released as they are consumed.
func NewChunkData(ctx context.Context, size uint64, cr ChunkReader, file *tensor.FileRef) *ChunkData {
	return &ChunkData{ctx: ctx, size: size, cr: cr, file: file}
}

// ChunkData is TensorData backed by a ChunkReader.
type ChunkData struct {
	ctx  context.Context
	size uint64
	cr   ChunkReader
	file *tensor.FileRef
	cur  *Chunk
	pos  int
	read uint64
	err  error
}

// Size returns the tensor's size in bytes.
func (d *ChunkData) Size() uint64 { return d.size }

// File returns the file reference, when the bytes lie in a file.
func (d *ChunkData) File() (tensor.FileRef, bool) {
	if d.file == nil {
		return tensor.FileRef{}, false
	}
	return *d.file, true
}

// NextChunk hands over the next whole chunk; the caller releases it. It must
// not be mixed with Read on the same data.
func (d *ChunkData) NextChunk(ctx context.Context) (*Chunk, error) {
	if d.err != nil {
		return nil, d.err
	}
	if d.cr == nil {
		return nil, io.EOF
	}
	c, err := d.cr.NextChunk(ctx)
	if err != nil {
		if err != io.EOF {
			d.err = err
		}
		return nil, err
	}
	d.read += uint64(len(c.Data))
	return c, nil
}

// Read copies bytes out of the chunks.
func (d *ChunkData) Read(p []byte) (int, error) {
	if d.cur == nil {
		c, err := d.NextChunk(d.ctx)
		if err != nil {
			return 0, err
		}
		d.cur, d.pos = c, 0
	}
	n := copy(p, d.cur.Data[d.pos:])
	d.pos += n
	if d.pos == len(d.cur.Data) {
		d.cur.Release()
		d.cur = nil
	}
	return n, nil
}

// WriteTo writes every chunk to w without an intermediate copy.
func (d *ChunkData) WriteTo(w io.Writer) (int64, error) {
	var total int64
	if d.cur != nil {
		n, err := w.Write(d.cur.Data[d.pos:])
		total += int64(n)
		d.cur.Release()
		d.cur = nil
		if err != nil {
			return total, err
		}
	}
	for {
		c, err := d.NextChunk(d.ctx)
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
		n, werr := w.Write(c.Data)
		total += int64(n)
		c.Release()
		if werr != nil {
			return total, werr
		}
	}
}

// Close releases whatever the data still holds and stops its reader.
func (d *ChunkData) Close() error {
	if d.cur != nil {
		d.cur.Release()
		d.cur = nil
	}
	if d.cr != nil {
		return d.cr.Close()
	}
	return nil
}

// Consumed reports how many bytes were taken from the chunk reader.
func (d *ChunkData) Consumed() uint64 { return d.read }
