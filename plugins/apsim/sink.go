package apsim

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/sluice-ml/sluice/sdk/atomicfile"
	"github.com/sluice-ml/sluice/sdk/bytesize"
	"github.com/sluice-ml/sluice/sdk/codec"
	"github.com/sluice-ml/sluice/sdk/keyring"
	"github.com/sluice-ml/sluice/sdk/plugin"
	st "github.com/sluice-ml/sluice/sdk/safetensors"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// DefaultShardSize is the shard size when the configuration sets none.
const DefaultShardSize = 4_000_000_000

// crashPoint, when set (by tests), is called at the named points of a save.
var crashPoint func(point string)

func reach(point string) {
	if crashPoint != nil {
		crashPoint(point)
	}
}

// Sink writes an apsim checkpoint.
type Sink struct {
	cfg       SinkConfig
	shardSize uint64
	key       *keySpec // from the configuration

	mu   sync.Mutex
	plan *layoutPlan
	outs []*atomicfile.File // by shard index; nil for a shard another run writes
	// digests follow each shard's writes with the format's digest (the
	// canonical table, then the data), by shard index.
	digests []*atomicfile.Follower
	// begin is what Begin was asked for (digests, fsync), for the index
	// Commit writes too.
	begin   plugin.BeginOptions
	signKey *keyring.Key
	written map[string]bool
	done    bool
	// partial is set when Begin was asked for some shards only (protocol
	// 1.1): the index is left to a finalize run.
	partial bool
	// finalize is set when Begin was asked for the index only.
	finalize bool
}

// NewSink checks the configuration; Begin creates files.
func NewSink(cfg *SinkConfig) (*Sink, error) {
	if cfg.Path == "" {
		return nil, plugin.ConfigErrorf("path", "must not be empty")
	}
	if strings.HasSuffix(cfg.Path, IndexSuffix) {
		return nil, plugin.ConfigErrorf("path", "names an index; give the checkpoint's path, NAME.apsim")
	}
	s := &Sink{cfg: *cfg, shardSize: DefaultShardSize}
	s.cfg.Key = "" // kept only in s.key, which never prints it
	if cfg.Shard != "" {
		n, err := bytesize.Parse(cfg.Shard)
		if err != nil {
			return nil, plugin.ConfigErrorf("shard", "%v", err)
		}
		if n == 0 {
			return nil, plugin.ConfigErrorf("shard", "a shard size of 0 cannot hold a tensor")
		}
		s.shardSize = n
	}
	switch {
	case cfg.Key != "" && cfg.Sign:
		// sign = true with a key: the key is the shared secret.
		s.key = &keySpec{shared: cfg.Key}
	case cfg.Key != "":
		s.key = &keySpec{shared: cfg.Key}
	case cfg.Sign:
		s.key = &keySpec{user: true}
	}
	return s, nil
}

// layoutPlan is the placement of every tensor.
type layoutPlan struct {
	shards    []*shardPlan
	place     map[string]placement
	metadata  string // the metadata JSON
	apsi      string
	keyID     string
	notes     []plugin.Decision
	convert   []plugin.Conversion
	total     uint64
	weightMap map[string]string
}

type shardPlan struct {
	path    string // final path
	file    string // base name
	tensors []st.Tensor
	units   map[string]json.RawMessage
	qts     map[string]qtensorEntry
	meta    map[string]string // __metadata__ with placeholders for digest and signature
	layout  *st.Layout
}

// placement is where one incoming tensor's bytes go.
type placement struct {
	shard  int
	size   uint64
	offset int64 // plain tensor: file offset of its data
	q      *codec.QTensor
	scales int64 // QTensor: file offsets of its scales and codes
	codes  int64
}

var zeroHex = strings.Repeat("0", 64)

// Plan decides the dtypes, shards and files.
func (s *Sink) Plan(ctx context.Context, in *tensor.Manifest) (*plugin.SinkPlan, error) {
	m := in.Clone()
	var convert []plugin.Conversion
	for i := range m.Tensors {
		t := &m.Tensors[i]
		info, known := t.DType.Info()
		switch {
		case !known:
			return nil, fmt.Errorf("tensor %q: unknown dtype %q", t.Name, t.DType)
		case info.Kind == tensor.KindQTensor:
			if !codec.IsQTensor(t.DType) {
				return nil, fmt.Errorf("tensor %q: QTensor dtype %s is not an apsim format", t.Name, t.DType)
			}
		case info.Safetensors == "":
			convert = append(convert, plugin.Conversion{Tensor: t.Name, To: tensor.F32,
				Reason: fmt.Sprintf("apsim holds safetensors dtypes and QTensors, not %s; expanded to f32", t.DType)})
			t.DType = tensor.F32
			n, err := t.DType.ShapeByteSize(t.Shape)
			if err != nil {
				return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
			}
			t.Size = n
		}
	}
	var keyID string
	if s.key != nil {
		keyID = s.key.String()
	}
	lp, err := s.layout(m, keyID)
	if err != nil {
		return nil, err
	}
	// The shards of a set stand alone (the signature of a set is in its
	// index), so separate runs can write them (protocol 1.1).
	p := &plugin.SinkPlan{Convert: convert, Notes: lp.notes, EmbedsSignature: true, Partitions: true}
	for _, sh := range lp.shards {
		p.Files = append(p.Files, plugin.PlannedFile{Path: sh.path, Size: sh.layout.FileSize(), Tensors: len(sh.tensors)})
	}
	if len(lp.shards) > 1 {
		p.Files = append(p.Files, plugin.PlannedFile{Path: IndexPath(s.cfg.Path)})
	}
	return p, nil
}

// layout assigns tensors to shards and lays out every file. keyID is the
// signing key's name, or "" when unsigned.
func (s *Sink) layout(m *tensor.Manifest, keyID string) (*layoutPlan, error) {
	lp := &layoutPlan{place: map[string]placement{}, apsi: Writer, keyID: keyID, weightMap: map[string]string{}}
	md := m.Metadata.Clone()
	if len(s.cfg.Metadata) > 0 {
		keys := make([]string, 0, len(s.cfg.Metadata))
		for k := range s.cfg.Metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			md.Set(k, tensor.StringValue(s.cfg.Metadata[k]))
		}
	}
	mdJSON, err := encodeMetadata(&md)
	if err != nil {
		return nil, err
	}
	lp.metadata = mdJSON

	type item struct {
		t        *tensor.TensorInfo
		entries  []st.Tensor
		q        *codec.QTensor
		unit     string
		shard    int
		physSize uint64
	}
	items := make([]item, len(m.Tensors))
	names := map[string]string{} // container name → manifest tensor
	assigned, unassigned := 0, 0
	sets := 0
	for i := range m.Tensors {
		t := &m.Tensors[i]
		if t.Name == "" || t.Name == st.MetadataKey {
			return nil, fmt.Errorf("tensor name %q cannot be stored", t.Name)
		}
		entries, q, err := physical(t)
		if err != nil {
			return nil, err
		}
		if q == nil {
			want, err := t.DType.ShapeByteSize(t.Shape)
			if err != nil {
				return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
			}
			if want != t.Size {
				return nil, fmt.Errorf("tensor %q: %s %v needs %d bytes, size says %d", t.Name, t.DType, t.Shape, want, t.Size)
			}
		}
		var phys uint64
		for _, e := range entries {
			if other, dup := names[e.Name]; dup {
				return nil, fmt.Errorf("tensor %q: its stored name %q collides with tensor %q (a QTensor's scales are stored as NAME%s)", t.Name, e.Name, other, ScaleSuffix)
			}
			names[e.Name] = t.Name
			phys += e.Size
		}
		unit := ""
		if raw := t.Attr(tensor.AttrUnit); raw != "" {
			if unit, err = canonicalUnit(raw); err != nil {
				return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
			}
		}
		it := item{t: t, entries: entries, q: q, unit: unit, physSize: phys}
		if raw := t.Attr(tensor.AttrShard); raw != "" {
			si, n, ok := tensor.ParseShard(raw)
			if !ok {
				return nil, fmt.Errorf("tensor %q: malformed shard assignment %q", t.Name, raw)
			}
			if sets == 0 {
				sets = n
			} else if n != sets {
				return nil, fmt.Errorf("tensor %q is assigned to shard %d/%d but others to a set of %d", t.Name, si, n, sets)
			}
			if n > maxShards {
				return nil, fmt.Errorf("tensor %q: %d shards is more than %d", t.Name, n, maxShards)
			}
			it.shard = si
			assigned++
		} else {
			unassigned++
		}
		items[i] = it
	}
	if assigned > 0 && unassigned > 0 {
		return nil, fmt.Errorf("%d tensors carry a shard assignment and %d do not; a shard stage assigns every tensor", assigned, unassigned)
	}
	nShards := sets
	if assigned == 0 {
		// Fill shards in manifest order, starting a new one when the next
		// tensor would overflow a non-empty shard (as Hugging Face does).
		var cur uint64
		nShards = 1
		for i := range items {
			if cur > 0 && cur+items[i].physSize > s.shardSize {
				nShards++
				cur = 0
			}
			items[i].shard = nShards
			cur += items[i].physSize
		}
		if nShards > maxShards {
			return nil, fmt.Errorf("a shard size of %s gives %d shards, more than %d", bytesize.Format(s.shardSize), nShards, maxShards)
		}
		if nShards > 1 {
			lp.notes = append(lp.notes, plugin.Decision{Msg: fmt.Sprintf("%d shards of at most %s (shard = %q) and %s", nShards, bytesize.Human(s.shardSize), s.shardSizeName(), filepath.Base(IndexPath(s.cfg.Path)))})
		}
	} else if nShards > 1 {
		lp.notes = append(lp.notes, plugin.Decision{Msg: fmt.Sprintf("%d shards as assigned by the shard stage, and %s", nShards, filepath.Base(IndexPath(s.cfg.Path)))})
	}
	if nShards == 0 {
		nShards = 1
	}
	for i := 1; i <= nShards; i++ {
		sp := &shardPlan{path: s.cfg.Path, units: map[string]json.RawMessage{}, qts: map[string]qtensorEntry{}}
		if nShards > 1 {
			sp.path = filepath.Join(filepath.Dir(s.cfg.Path), ShardName(s.cfg.Path, i, nShards))
		}
		sp.file = filepath.Base(sp.path)
		lp.shards = append(lp.shards, sp)
	}
	for _, it := range items {
		sp := lp.shards[it.shard-1]
		sp.tensors = append(sp.tensors, it.entries...)
		for _, e := range it.entries {
			lp.weightMap[e.Name] = sp.file
			lp.total += e.Size
		}
		if it.q != nil {
			sp.qts[it.t.Name] = newQTensorEntry(it.q, it.unit)
			lp.notes = append(lp.notes, plugin.Decision{Tensor: it.t.Name, Msg: fmt.Sprintf("QTensor %s: codes %s %v and %s%s f32 %v",
				it.q.Format().Name, it.q.Format().CodeDType, it.q.CodesShape(), it.t.Name, ScaleSuffix, it.q.ScaleShape())})
		} else if it.unit != "" {
			sp.units[it.t.Name] = json.RawMessage(it.unit)
		}
	}
	for i, sp := range lp.shards {
		units, _ := json.Marshal(sp.units)
		qts, _ := json.Marshal(sp.qts)
		// The checkpoint's metadata (which may hold a whole tokenizer) is
		// stored once, in the first shard.
		md := lp.metadata
		if i > 0 {
			md = "{}"
		}
		sp.meta = map[string]string{
			KeyFormat: FormatName, KeyVersion: FormatVersion, KeyApsi: lp.apsi,
			KeyUnits: string(units), KeyQTensors: string(qts), KeyMetadata: md,
			KeySHA256: zeroHex,
		}
		if nShards > 1 {
			sp.meta[KeyShard] = tensor.FormatShard(i+1, nShards)
		} else if keyID != "" {
			sp.meta[KeyKeyID] = keyID
			sp.meta[KeySignature] = zeroHex
		}
		l, err := st.PlanLayout(sp.tensors, sp.meta)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sp.path, err)
		}
		sp.layout = l
	}
	if keyID != "" {
		lp.notes = append(lp.notes, plugin.Decision{Msg: "signed with the " + keyID + " (HMAC-SHA256)"})
	}
	for _, it := range items {
		sp := lp.shards[it.shard-1]
		pl := placement{shard: it.shard - 1, size: it.t.Size, q: it.q}
		if it.q != nil {
			pl.codes, _ = sp.layout.Offset(it.entries[0].Name)
			pl.scales, _ = sp.layout.Offset(it.entries[1].Name)
		} else {
			pl.offset, _ = sp.layout.Offset(it.t.Name)
		}
		lp.place[it.t.Name] = pl
	}
	return lp, nil
}

func (s *Sink) shardSizeName() string {
	if s.cfg.Shard == "" {
		return "4GB"
	}
	return s.cfg.Shard
}

// Begin creates every output under a temporary name. A signing key comes
// from a sign stage (opts) or from the configuration, not both.
func (s *Sink) Begin(ctx context.Context, m *tensor.Manifest, opts plugin.BeginOptions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.plan != nil {
		return errors.New("apsim sink: Begin called twice")
	}
	var key *keyring.Key
	switch {
	case len(opts.SigningKey) > 0 && s.key != nil:
		return plugin.ConfigErrorf("key", "a sign stage already gives this sink a key; remove sign/key from the sink or the sign stage")
	case len(opts.SigningKey) > 0:
		id := opts.SigningKeyID
		if id == "" {
			id = "sign stage key"
		}
		k, err := keyring.FromBytes(opts.SigningKey, id)
		if err != nil {
			return err
		}
		key = k
	case s.key != nil:
		k, err := s.key.resolve(true)
		if err != nil {
			return fmt.Errorf("signing %s: cannot load the %s: %w", s.cfg.Path, s.key, err)
		}
		key = k
	}
	keyID := ""
	if key != nil {
		keyID = key.ID()
	}
	lp, err := s.layout(m, keyID)
	if err != nil {
		return err
	}
	want, err := s.selectShards(lp, opts)
	if err != nil {
		return err
	}
	s.outs = make([]*atomicfile.File, len(lp.shards))
	s.digests = make([]*atomicfile.Follower, len(lp.shards))
	s.begin = plugin.BeginOptions{Digests: opts.Digests, NoFsync: opts.NoFsync} // not the signing key
	for i, sh := range lp.shards {
		if !want[i] {
			continue
		}
		f, err := plugin.CreateOutput(sh.path, int64(sh.layout.FileSize()), opts)
		if err != nil {
			s.abortLocked()
			return err
		}
		s.outs[i] = f
		s.digests[i] = f.Follow(newDigest(sh.meta, sh.layout.Tensors), int64(len(sh.layout.Prefix)))
	}
	s.plan, s.signKey, s.written = lp, key, map[string]bool{}
	reach("begun")
	return nil
}

// selectShards returns the shards (by index) Begin creates: all of them,
// those opts.Shards names (numbered from 1), or none for a finalize run.
func (s *Sink) selectShards(lp *layoutPlan, opts plugin.BeginOptions) (map[int]bool, error) {
	want := map[int]bool{}
	switch {
	case opts.Finalize:
		if len(opts.Shards) > 0 {
			return nil, fmt.Errorf("apsim sink %s: a finalize run writes no shards, but shards %v were asked for", s.cfg.Path, opts.Shards)
		}
		s.finalize = true
	case len(opts.Shards) > 0:
		s.partial = true
		for _, i := range opts.Shards {
			if i < 1 || i > len(lp.shards) {
				return nil, fmt.Errorf("apsim sink %s: shard %d asked for, the set has %d", s.cfg.Path, i, len(lp.shards))
			}
			want[i-1] = true
		}
	default:
		for i := range lp.shards {
			want[i] = true
		}
	}
	return want, nil
}

// Write stores one tensor's bytes at its planned place.
func (s *Sink) Write(ctx context.Context, name string, data plugin.TensorData) error {
	s.mu.Lock()
	if s.plan == nil || s.done {
		s.mu.Unlock()
		return fmt.Errorf("apsim sink %s: Write outside Begin/Commit", s.cfg.Path)
	}
	pl, ok := s.plan.place[name]
	if !ok {
		s.mu.Unlock()
		return fmt.Errorf("apsim sink %s: tensor %q is not in the planned manifest", s.cfg.Path, name)
	}
	if s.written[name] {
		s.mu.Unlock()
		return fmt.Errorf("apsim sink %s: tensor %q written twice", s.cfg.Path, name)
	}
	out := s.outs[pl.shard]
	if out == nil {
		s.mu.Unlock()
		return fmt.Errorf("apsim sink %s: tensor %q belongs to shard %d, which this run does not write", s.cfg.Path, name, pl.shard+1)
	}
	s.written[name] = true
	s.mu.Unlock()

	if data.Size() != pl.size {
		return fmt.Errorf("apsim sink %s: tensor %q: got %d bytes, planned %d", s.cfg.Path, name, data.Size(), pl.size)
	}
	if pl.q == nil {
		if err := plugin.CopyToFile(out, pl.offset, data); err != nil {
			return fmt.Errorf("apsim sink %s: tensor %q: %w", s.cfg.Path, name, err)
		}
		out.Final(pl.offset, int64(pl.size)) // safetensors data is contiguous: no padding follows
	} else {
		// Scales first, then codes, as a QTensor's bytes flow.
		for _, part := range []struct {
			off int64
			n   uint64
		}{{pl.scales, pl.q.ScaleSize()}, {pl.codes, pl.q.CodesSize()}} {
			if _, err := io.CopyN(io.NewOffsetWriter(out.File, part.off), data, int64(part.n)); err != nil {
				return fmt.Errorf("apsim sink %s: tensor %q: %w", s.cfg.Path, name, err)
			}
			out.Final(part.off, int64(part.n))
		}
		var one [1]byte
		if n, _ := data.Read(one[:]); n != 0 {
			return fmt.Errorf("apsim sink %s: tensor %q: data is longer than its %d bytes", s.cfg.Path, name, pl.size)
		}
	}
	reach("wrote " + name)
	return nil
}

// Commit computes every digest (and the signature), writes the headers,
// renames the shards into place and writes the index last.
func (s *Sink) Commit(ctx context.Context) ([]plugin.Artifact, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.plan == nil || s.done {
		return nil, fmt.Errorf("apsim sink %s: Commit outside Begin", s.cfg.Path)
	}
	lp := s.plan
	if s.finalize {
		return s.commitIndex()
	}
	for name, pl := range lp.place {
		if !s.written[name] && s.outs[pl.shard] != nil {
			s.abortLocked()
			return nil, fmt.Errorf("apsim sink %s: tensor %q was never written", s.cfg.Path, name)
		}
	}
	reach("writes done")
	// Digests, several shards at once.
	digests := make([][32]byte, len(lp.shards))
	errs := make([]error, len(lp.shards))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, sh := range lp.shards {
		if s.outs[i] == nil {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if errs[i] = s.digests[i].Finish(int64(sh.layout.FileSize())); errs[i] == nil {
				s.digests[i].Sum(digests[i][:0])
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		s.abortLocked()
		return nil, err
	}
	reach("hashed")
	var ix *index
	for i, sh := range lp.shards {
		if s.outs[i] == nil {
			continue
		}
		sh.meta[KeySHA256] = hex.EncodeToString(digests[i][:])
		if _, ok := sh.meta[KeySignature]; ok {
			msg := signingInput([]signedShard{{Digest: digests[i]}}, sh.meta, nil)
			sh.meta[KeySignature] = hex.EncodeToString(s.signKey.Sum(msg))
		}
		l, err := st.PlanLayout(sh.tensors, sh.meta)
		if err != nil || len(l.Prefix) != len(sh.layout.Prefix) {
			s.abortLocked()
			return nil, fmt.Errorf("apsim sink %s: the final header does not fit its planned place (%v)", sh.path, err)
		}
		if _, err := s.outs[i].WriteAt(l.Prefix, 0); err != nil {
			s.abortLocked()
			return nil, fmt.Errorf("apsim sink %s: writing the header: %w", sh.path, err)
		}
		s.outs[i].Final(0, int64(len(l.Prefix)))
	}
	if len(lp.shards) > 1 && !s.partial {
		ix = s.index(digests)
	}
	reach("headers written")
	var arts []plugin.Artifact
	for i, sh := range lp.shards {
		if s.outs[i] == nil {
			continue
		}
		if err := s.outs[i].Commit(); err != nil {
			s.abortLocked()
			return nil, err
		}
		arts = append(arts, plugin.Committed(s.outs[i], sh.layout.FileSize()))
		reach(fmt.Sprintf("renamed %d", i+1))
	}
	if ix != nil {
		a, err := s.writeIndex(ix)
		if err != nil {
			s.abortLocked()
			return nil, err
		}
		arts = append(arts, a)
	}
	s.done = true
	reach("committed")
	return arts, nil
}

// index builds a set's index from its shards' digests, signed when there is
// a key.
func (s *Sink) index(digests [][32]byte) *index {
	lp := s.plan
	total := lp.total
	ix := &index{Metadata: indexMeta{TotalSize: &total, Format: FormatName, Version: FormatVersion, Apsi: lp.apsi}, WeightMap: lp.weightMap}
	for i, sh := range lp.shards {
		ix.Metadata.Shards = append(ix.Metadata.Shards, indexShard{File: sh.file, SHA256: hex.EncodeToString(digests[i][:])})
	}
	if s.signKey != nil {
		ix.Metadata.KeyID = s.signKey.ID()
		msg := signingInput(ix.Metadata.signedShards(), ix.Metadata.signedMeta(), ix.WeightMap)
		ix.Metadata.Signature = hex.EncodeToString(s.signKey.Sum(msg))
	}
	return ix
}

// writeIndex writes the index file atomically.
func (s *Sink) writeIndex(ix *index) (plugin.Artifact, error) {
	b, err := ix.encode()
	if err != nil {
		return plugin.Artifact{}, err
	}
	return plugin.WriteOutput(IndexPath(s.cfg.Path), b, s.begin)
}

// commitIndex writes the index of a set whose shards earlier runs wrote
// (protocol 1.1 finalize): each shard's digest is read from its header,
// after checking that the header is the one this plan lays out.
func (s *Sink) commitIndex() ([]plugin.Artifact, error) {
	lp := s.plan
	s.done = true
	if len(lp.shards) < 2 {
		return nil, nil
	}
	digests := make([][32]byte, len(lp.shards))
	for i, sh := range lp.shards {
		d, err := shardDigest(sh)
		if err != nil {
			return nil, err
		}
		digests[i] = d
	}
	a, err := s.writeIndex(s.index(digests))
	if err != nil {
		return nil, err
	}
	return []plugin.Artifact{a}, nil
}

// shardDigest reads the digest a committed shard records in its header,
// and checks that the shard is the one planned: its size, and its header
// byte for byte once that digest is put in.
func shardDigest(sh *shardPlan) ([32]byte, error) {
	var d [32]byte
	f, err := os.Open(sh.path)
	if err != nil {
		return d, &plugin.InputError{File: sh.path, Msg: "cannot finalize the set: this shard was not written (run every partition first)", Err: err}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return d, err
	}
	if uint64(fi.Size()) != sh.layout.FileSize() {
		return d, &plugin.InputError{File: sh.path, Msg: fmt.Sprintf("cannot finalize the set: the shard has %d bytes, the plan says %d", fi.Size(), sh.layout.FileSize())}
	}
	h, err := st.ReadHeader(f, fi.Size(), sh.path)
	if err != nil {
		return d, err
	}
	sum := h.Metadata[KeySHA256]
	b, err := hex.DecodeString(sum)
	if err != nil || len(b) != 32 {
		return d, &plugin.InputError{File: sh.path, Msg: fmt.Sprintf("cannot finalize the set: the shard's %s is %q", KeySHA256, sum)}
	}
	copy(d[:], b)
	meta := make(map[string]string, len(sh.meta))
	for k, v := range sh.meta {
		meta[k] = v
	}
	meta[KeySHA256] = sum
	l, err := st.PlanLayout(sh.tensors, meta)
	if err != nil {
		return d, err
	}
	prefix := make([]byte, len(l.Prefix))
	if _, err := f.ReadAt(prefix, 0); err != nil || !bytes.Equal(prefix, l.Prefix) {
		return d, &plugin.InputError{File: sh.path, Msg: "cannot finalize the set: the shard's header is not the one this pipeline plans (another run's shard?)"}
	}
	return d, nil
}

// Abort removes every temporary output.
func (s *Sink) Abort(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.abortLocked()
}

func (s *Sink) abortLocked() error {
	var errs []error
	for _, f := range s.outs {
		if f != nil {
			errs = append(errs, f.Abort())
		}
	}
	s.done = true
	return errors.Join(errs...)
}
