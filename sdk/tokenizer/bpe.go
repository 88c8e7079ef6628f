package tokenizer

import (
	"container/heap"
	"math"
	"strings"
	"sync"
)

// merge is the result of merging a pair of tokens: the merge's rank (lower
// merges first) and the id of the merged token.
type merge struct {
	rank, id int32
}

func pairKey(left, right int32) uint64 { return uint64(uint32(left))<<32 | uint64(uint32(right)) }

// bpeModel turns one pre-tokenized piece into token ids.
//
// Byte-level vocabularies are keyed by the bytes their tokens stand for
// ("Ġworld" is stored as " world"), so the text never needs re-encoding; the
// initial symbols are the bytes. Other vocabularies are keyed by their token
// text and start from the characters, with <0xNN> byte tokens (or unk) for
// characters outside the vocabulary.
type bpeModel struct {
	vocab        map[string]int32
	merges       map[uint64]merge
	byteLevel    bool
	byteID       [256]int32 // byte-level: the token of each byte; otherwise the <0xNN> token, -1 if none
	byteFallback bool
	unk          int32 // -1 if none
	fuseUnk      bool
	ignoreMerges bool
	// scores, when set, switch to SentencePiece-style merging as llama.cpp
	// does for GGUF "llama" vocabularies: repeatedly join the adjacent pair
	// whose concatenation is the vocabulary's highest-scoring token.
	scores []float32

	mu    sync.RWMutex
	cache map[string][]int32
}

const (
	maxCachedPiece = 256     // bytes; longer pieces are not cached
	maxCacheSize   = 1 << 16 // entries; the cache starts over when full
	linearMergeMax = 48      // symbols; longer words use a heap
)

// encode appends the ids of piece to out.
func (m *bpeModel) encode(piece string, out []int32) []int32 {
	if m.ignoreMerges {
		if id, ok := m.vocab[piece]; ok {
			return append(out, id)
		}
	}
	cacheable := len(piece) <= maxCachedPiece
	if cacheable {
		m.mu.RLock()
		ids, ok := m.cache[piece]
		m.mu.RUnlock()
		if ok {
			return append(out, ids...)
		}
	}
	start := len(out)
	if m.scores != nil {
		out = m.encodeByScore(piece, out)
	} else {
		out = m.encodeByRank(piece, out)
	}
	if cacheable {
		ids := append([]int32(nil), out[start:]...)
		m.mu.Lock()
		if m.cache == nil || len(m.cache) >= maxCacheSize {
			m.cache = make(map[string][]int32)
		}
		m.cache[strings.Clone(piece)] = ids // a piece shares the caller's text
		m.mu.Unlock()
	}
	return out
}

// initialSymbols appends the starting symbols of piece to ids.
func (m *bpeModel) initialSymbols(piece string, ids []int32) []int32 {
	if m.byteLevel {
		for i := 0; i < len(piece); i++ {
			if id := m.byteID[piece[i]]; id >= 0 {
				ids = append(ids, id)
			} else if m.unk >= 0 {
				ids = append(ids, m.unk)
			}
		}
		return ids
	}
	pendingUnk := false
	for i := 0; i < len(piece); {
		_, w := decodeRune(piece, i)
		ch := piece[i : i+w]
		i += w
		if id, ok := m.vocab[ch]; ok {
			if pendingUnk {
				ids = append(ids, m.unk)
				pendingUnk = false
			}
			ids = append(ids, id)
			continue
		}
		if m.byteFallback && m.hasBytes(ch) {
			if pendingUnk {
				ids = append(ids, m.unk)
				pendingUnk = false
			}
			for j := 0; j < len(ch); j++ {
				ids = append(ids, m.byteID[ch[j]])
			}
			continue
		}
		if m.unk < 0 {
			continue
		}
		if pendingUnk && !m.fuseUnk {
			ids = append(ids, m.unk)
		}
		pendingUnk = true
	}
	if pendingUnk {
		ids = append(ids, m.unk)
	}
	return ids
}

func (m *bpeModel) hasBytes(s string) bool {
	for i := 0; i < len(s); i++ {
		if m.byteID[s[i]] < 0 {
			return false
		}
	}
	return true
}

func (m *bpeModel) lookupMerge(left, right int32) merge {
	if mg, ok := m.merges[pairKey(left, right)]; ok {
		return mg
	}
	return merge{rank: math.MaxInt32, id: -1}
}

// encodeByRank applies the merges, lowest rank first and leftmost first
// among equal ranks, as Hugging Face's BPE model does.
func (m *bpeModel) encodeByRank(piece string, out []int32) []int32 {
	start := len(out)
	out = m.initialSymbols(piece, out)
	ids := out[start:]
	if len(ids) < 2 {
		return out
	}
	if len(ids) > linearMergeMax {
		ids = m.mergeHeap(ids)
	} else {
		ids = m.mergeLinear(ids)
	}
	return out[:start+len(ids)]
}

// mergeLinear is encodeByRank's loop for short words: scan for the lowest
// rank, merge, update the two neighbouring pairs. It rewrites ids in place
// and returns them; len(ids) must not exceed linearMergeMax.
func (m *bpeModel) mergeLinear(ids []int32) []int32 {
	var pairBuf [linearMergeMax]merge
	pairs := pairBuf[:len(ids)-1]
	for i := range pairs {
		pairs[i] = m.lookupMerge(ids[i], ids[i+1])
	}
	for {
		best, bestRank := -1, int32(math.MaxInt32)
		for i, p := range pairs {
			if p.rank < bestRank {
				best, bestRank = i, p.rank
			}
		}
		if best < 0 {
			return ids
		}
		ids[best] = pairs[best].id
		copy(ids[best+1:], ids[best+2:])
		ids = ids[:len(ids)-1]
		copy(pairs[best:], pairs[best+1:])
		pairs = pairs[:len(pairs)-1]
		if best > 0 {
			pairs[best-1] = m.lookupMerge(ids[best-1], ids[best])
		}
		if best < len(pairs) {
			pairs[best] = m.lookupMerge(ids[best], ids[best+1])
		}
	}
}

// mergeCandidate is a possible merge of the symbols at pos and its successor,
// valid while they still hold the ids left and right.
type mergeCandidate struct {
	rank        int32
	pos         int32
	left, right int32
}

type mergeQueue []mergeCandidate

func (q mergeQueue) Len() int { return len(q) }
func (q mergeQueue) Less(i, j int) bool {
	if q[i].rank != q[j].rank {
		return q[i].rank < q[j].rank
	}
	return q[i].pos < q[j].pos
}
func (q mergeQueue) Swap(i, j int)          { q[i], q[j] = q[j], q[i] }
func (q *mergeQueue) Push(x any)            { *q = append(*q, x.(mergeCandidate)) }
func (q *mergeQueue) Pop() any              { old := *q; x := old[len(old)-1]; *q = old[:len(old)-1]; return x }
func (q *mergeQueue) push(c mergeCandidate) { heap.Push(q, c) }

// mergeHeap is encodeByRank's loop for long words: the same order, found
// with a priority queue. It rewrites ids in place and returns them.
func (m *bpeModel) mergeHeap(ids []int32) []int32 {
	n := len(ids)
	next := make([]int32, n)
	prev := make([]int32, n)
	alive := make([]bool, n)
	for i := range ids {
		next[i], prev[i], alive[i] = int32(i+1), int32(i-1), true
	}
	next[n-1] = -1
	q := make(mergeQueue, 0, n)
	for i := 0; i+1 < n; i++ {
		if mg := m.lookupMerge(ids[i], ids[i+1]); mg.id >= 0 {
			q = append(q, mergeCandidate{mg.rank, int32(i), ids[i], ids[i+1]})
		}
	}
	heap.Init(&q)
	for q.Len() > 0 {
		c := heap.Pop(&q).(mergeCandidate)
		p := c.pos
		nx := next[p]
		if !alive[p] || nx < 0 || ids[p] != c.left || ids[nx] != c.right {
			continue
		}
		ids[p] = m.merges[pairKey(c.left, c.right)].id
		alive[nx] = false
		next[p] = next[nx]
		if next[p] >= 0 {
			prev[next[p]] = p
		}
		if pp := prev[p]; pp >= 0 {
			if mg := m.lookupMerge(ids[pp], ids[p]); mg.id >= 0 {
				q.push(mergeCandidate{mg.rank, pp, ids[pp], ids[p]})
			}
		}
		if nn := next[p]; nn >= 0 {
			if mg := m.lookupMerge(ids[p], ids[nn]); mg.id >= 0 {
				q.push(mergeCandidate{mg.rank, p, ids[p], ids[nn]})
			}
		}
	}
	k := 0
	for i := 0; i < n; i++ {
		if alive[i] {
			ids[k] = ids[i]
			k++
		}
	}
	return ids[:k]
}

// scoreCandidate is a possible join of the symbols left and right (and
// everything merged into them) into a token of the given score and size.
type scoreCandidate struct {
	score       float32
	left, right int32
	size        int32
}

type scoreQueue []scoreCandidate

func (q scoreQueue) Len() int { return len(q) }
func (q scoreQueue) Less(i, j int) bool {
	if q[i].score != q[j].score {
		return q[i].score > q[j].score
	}
	return q[i].left < q[j].left
}
func (q scoreQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *scoreQueue) Push(x any)   { *q = append(*q, x.(scoreCandidate)) }
func (q *scoreQueue) Pop() any     { old := *q; x := old[len(old)-1]; *q = old[:len(old)-1]; return x }

// encodeByScore is llama.cpp's SentencePiece tokenizer: start from the
// characters, repeatedly join the adjacent pair whose concatenation is the
// highest-scoring token (leftmost among equals), then emit each symbol's
// token, or its bytes as <0xNN> tokens (or unk) when it is not one.
func (m *bpeModel) encodeByScore(text string, out []int32) []int32 {
	type sym struct{ start, end, prev, next int32 }
	syms := make([]sym, 0, len(text))
	for i := 0; i < len(text); {
		_, w := decodeRune(text, i)
		k := int32(len(syms))
		syms = append(syms, sym{int32(i), int32(i + w), k - 1, k + 1})
		i += w
	}
	if len(syms) == 0 {
		return out
	}
	syms[len(syms)-1].next = -1
	var q scoreQueue
	try := func(l, r int32) {
		if l < 0 || r < 0 {
			return
		}
		id, ok := m.vocab[text[syms[l].start:syms[r].end]]
		if !ok || int(id) >= len(m.scores) {
			return
		}
		heap.Push(&q, scoreCandidate{m.scores[id], l, r, syms[r].end - syms[l].start})
	}
	for i := 1; i < len(syms); i++ {
		try(int32(i-1), int32(i))
	}
	for q.Len() > 0 {
		c := heap.Pop(&q).(scoreCandidate)
		l, r := &syms[c.left], &syms[c.right]
		if l.end == l.start || r.end == r.start || l.next != c.right || r.end-l.start != c.size {
			continue
		}
		l.end = r.end
		r.start = r.end // emptied
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = c.left
		}
		try(l.prev, c.left)
		try(c.left, l.next)
	}
	for i := int32(0); i >= 0; i = syms[i].next {
		piece := text[syms[i].start:syms[i].end]
		if id, ok := m.vocab[piece]; ok {
			out = append(out, id)
			continue
		}
		for j := 0; j < len(piece); j++ {
			if id := m.byteID[piece[j]]; id >= 0 {
				out = append(out, id)
			} else if m.unk >= 0 {
				out = append(out, m.unk)
			}
		}
	}
	return out
}
