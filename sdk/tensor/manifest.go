package tensor

import (
	"fmt"
	"strconv"
	"strings"
)

// FileRef locates bytes that sit unchanged in a file on this machine: a
// consumer may read them itself (ReadAt, mmap, copy_file_range) instead of
// having them sent.
type FileRef struct {
	Path   string
	Offset uint64
	Length uint64
}

// TensorInfo describes one tensor: its name, dtype, row-major shape (outermost
// first), byte size and free-form attributes.
type TensorInfo struct {
	Name  string
	DType DType
	Shape []uint64
	// Size is the number of bytes of the tensor as it flows.
	Size uint64
	// Attrs holds annotations: a physical unit, a shard assignment, a
	// QTensor's parameters. Keys defined by Sluice start with "sluice." or are
	// listed as Attr constants.
	Attrs map[string]string
	// Location, when set, says the bytes lie unchanged in a local file.
	Location *FileRef
}

// Attribute keys with a meaning shared between components.
const (
	// AttrUnit holds a tensor's physical unit as a JSON dimension vector
	// (apsim units); GGUF keeps it as metadata key apsi.units.<tensor>.
	AttrUnit = "unit"
	// AttrShard assigns a tensor to shard "i/N" (1-based i), set by the shard
	// transform and honoured by every sink that writes several files.
	AttrShard = "sluice.shard"
	// AttrTiedTo names another tensor that shares this tensor's storage.
	AttrTiedTo = "sluice.tied_to"
)

// Elements returns the element count of the shape.
func (t *TensorInfo) Elements() (uint64, error) { return ElementCount(t.Shape) }

// Attr returns an attribute, or "".
func (t *TensorInfo) Attr(key string) string { return t.Attrs[key] }

// SetAttr sets an attribute, creating the map when needed.
func (t *TensorInfo) SetAttr(key, value string) {
	if t.Attrs == nil {
		t.Attrs = make(map[string]string)
	}
	t.Attrs[key] = value
}

// Clone returns a deep copy.
func (t *TensorInfo) Clone() TensorInfo {
	c := *t
	c.Shape = append([]uint64(nil), t.Shape...)
	if t.Attrs != nil {
		c.Attrs = make(map[string]string, len(t.Attrs))
		for k, v := range t.Attrs {
			c.Attrs[k] = v
		}
	}
	if t.Location != nil {
		loc := *t.Location
		c.Location = &loc
	}
	return c
}

// Shard returns the 1-based shard index and shard count from AttrShard.
func (t *TensorInfo) Shard() (i, n int, ok bool) {
	return ParseShard(t.Attrs[AttrShard])
}

// ParseShard parses "i/N" with 1 ≤ i ≤ N.
func ParseShard(s string) (i, n int, ok bool) {
	a, b, found := strings.Cut(s, "/")
	if !found {
		return 0, 0, false
	}
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || i < 1 || n < 1 || i > n {
		return 0, 0, false
	}
	return i, n, true
}

// FormatShard renders a shard assignment as "i/N".
func FormatShard(i, n int) string { return fmt.Sprintf("%d/%d", i, n) }

// CheckSize verifies that Size matches the dtype and shape, for dtypes with a
// fixed geometry. QTensor dtypes are checked by sdk/codec.
func (t *TensorInfo) CheckSize() error {
	info, ok := t.DType.Info()
	if !ok {
		return fmt.Errorf("tensor %q: unknown dtype %q", t.Name, t.DType)
	}
	if info.Kind == KindQTensor {
		return nil
	}
	want, err := t.DType.ShapeByteSize(t.Shape)
	if err != nil {
		return fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	if want != t.Size {
		return fmt.Errorf("tensor %q: %s %v needs %d bytes, size says %d", t.Name, t.DType, t.Shape, want, t.Size)
	}
	return nil
}

// Manifest describes a checkpoint: typed metadata and an ordered list of tensors.
type Manifest struct {
	Metadata Metadata
	Tensors  []TensorInfo
}

// Tensor returns the tensor called name.
func (m *Manifest) Tensor(name string) (*TensorInfo, bool) {
	for i := range m.Tensors {
		if m.Tensors[i].Name == name {
			return &m.Tensors[i], true
		}
	}
	return nil, false
}

// Index returns a name → position map of the tensors.
func (m *Manifest) Index() map[string]int {
	idx := make(map[string]int, len(m.Tensors))
	for i := range m.Tensors {
		idx[m.Tensors[i].Name] = i
	}
	return idx
}

// TotalSize returns the sum of tensor sizes.
func (m *Manifest) TotalSize() uint64 {
	var n uint64
	for i := range m.Tensors {
		n += m.Tensors[i].Size
	}
	return n
}

// Params returns the total element count of all tensors.
func (m *Manifest) Params() uint64 {
	var n uint64
	for i := range m.Tensors {
		e, _ := m.Tensors[i].Elements()
		n += e
	}
	return n
}

// Clone returns a deep copy.
func (m *Manifest) Clone() *Manifest {
	c := &Manifest{Metadata: m.Metadata.Clone(), Tensors: make([]TensorInfo, len(m.Tensors))}
	for i := range m.Tensors {
		c.Tensors[i] = m.Tensors[i].Clone()
	}
	return c
}

// Validate checks that tensor names are unique and non-empty and that every
// size agrees with its dtype and shape.
func (m *Manifest) Validate() error {
	seen := make(map[string]bool, len(m.Tensors))
	for i := range m.Tensors {
		t := &m.Tensors[i]
		if t.Name == "" {
			return fmt.Errorf("tensor %d has an empty name", i)
		}
		if seen[t.Name] {
			return fmt.Errorf("tensor %q appears twice", t.Name)
		}
		seen[t.Name] = true
		if err := t.CheckSize(); err != nil {
			return err
		}
	}
	return nil
}
